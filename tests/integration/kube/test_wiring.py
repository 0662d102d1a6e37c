"""Informer -> work queue -> reconcile: a Node turning Ready wakes its reconciler at once."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from atomic_gang_provisioner.kube import Handlers, Informer, KubeClient, by_label
from atomic_gang_provisioner.runtime import Controller, Result
from tests.integration.kube.conftest import FIGURES
from tests.support import resources as r
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube


class PoolWiring:
    """How the provisioner wires Nodes to pool reconciles: index by pool, enqueue the pool."""

    def __init__(self, client: KubeClient) -> None:
        self.nodes = Informer(
            client, r.NODES, label_selector="suite=wiring", indexers={"pool": by_label("pool")}
        )
        self.ctrl: Controller[str] = Controller(
            name="pool", reconcile=self.reconcile, max_workers=2
        )
        self.nodes.add_handlers(Handlers.for_all(self.enqueue_pool))
        self.woke: list[float] = []
        self.lock = threading.Lock()

    def enqueue_pool(self, node: dict[str, Any]) -> None:
        pool = node["metadata"].get("labels", {}).get("pool")
        if pool:
            self.ctrl.enqueue(pool)

    def reconcile(self, pool: str) -> Result:
        with self.lock:
            self.woke.append(time.monotonic())
        conds = [
            n.get("status", {}).get("conditions", [{}])[0]
            for n in self.nodes.by_index("pool", pool)
        ]
        ready = all(c.get("status") == "True" for c in conds)
        return Result(requeue_after=None if ready else 60.0)

    def woken_since(self, t0: float) -> float | None:
        with self.lock:
            return next((t for t in self.woke if t >= t0), None)


@pytest.fixture
def wiring(client: KubeClient) -> Iterator[PoolWiring]:
    w = PoolWiring(client)
    w.nodes.start()
    w.ctrl.start()
    assert w.nodes.wait_for_sync(15)
    yield w
    assert w.ctrl.stop(timeout=10)
    w.nodes.stop()


def test_node_ready_reaches_the_pool_reconcile_in_milliseconds(
    client: KubeClient, wiring: PoolWiring
) -> None:
    labels = {"suite": "wiring", "pool": "gp"}
    client.create(r.NODES, {"metadata": {"name": "w-1", "labels": labels}})
    wait_for(lambda: wiring.woken_since(0), timeout=15, interval=0.002)
    lat = []
    for i in range(30):
        t0 = time.monotonic()
        cond = {"type": "Ready", "status": "True" if i % 2 == 0 else "False", "reason": "r"}
        client.patch(r.NODES, "w-1", {"status": {"conditions": [cond]}}, subresource="status")
        woke = wait_for(partial(wiring.woken_since, t0), timeout=15, interval=0.002)
        lat.append((woke - t0) * 1000)
    p50 = statistics.median(lat)
    FIGURES["Node status PATCH sent -> pool reconcile running (ms)"] = (
        f"p50 {p50:.1f}, max {max(lat):.1f} (n=30, informer -> queue -> worker)"
    )
    assert p50 < 50

"""Informer -> work queue -> reconcile: a Node turning Ready wakes its reconciler at once."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import pytest

from atomic_gang_provisioner.kube import Handlers, Informer, KubeClient, by_label
from atomic_gang_provisioner.kube import resource as r
from atomic_gang_provisioner.runtime import Controller, Result
from tests.integration.kube.conftest import FIGURES
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube


def test_node_ready_reaches_the_pool_reconcile_in_milliseconds(client: KubeClient) -> None:
    woke: dict[str, list[float]] = {}
    lock = threading.Lock()
    nodes = Informer(
        client, r.NODES, label_selector="suite=wiring", indexers={"pool": by_label("pool")}
    )

    def reconcile(pool: str) -> Result:
        ready = [
            n
            for n in nodes.by_index("pool", pool)
            if n.get("status", {}).get("conditions", [{}])[0].get("status") == "True"
        ]
        with lock:
            woke.setdefault(pool, []).append(time.monotonic())
        return Result(requeue_after=None if ready else 60.0)

    ctrl: Controller[str] = Controller(name="pool", reconcile=reconcile, max_workers=2)

    def enqueue_pool(node: dict[str, Any]) -> None:
        pool = node["metadata"].get("labels", {}).get("pool")
        if pool:
            ctrl.enqueue(pool)

    nodes.add_handlers(Handlers.for_all(enqueue_pool))
    nodes.start()
    ctrl.start()
    try:
        assert nodes.wait_for_sync(15)
        client.create(
            r.NODES, {"metadata": {"name": "w-1", "labels": {"suite": "wiring", "pool": "gp"}}}
        )
        wait_for(lambda: woke.get("gp"), timeout=15, interval=0.002)
        lat = []
        for i in range(30):
            t0 = time.monotonic()
            cond = {"type": "Ready", "status": "True" if i % 2 == 0 else "False", "reason": "r"}
            client.patch_status(r.NODES, "w-1", {"status": {"conditions": [cond]}})

            def woken(t0: float = t0) -> float | None:
                with lock:
                    return next((t for t in woke["gp"] if t >= t0), None)

            lat.append((wait_for(woken, timeout=15, interval=0.002) - t0) * 1000)
        p50 = statistics.median(lat)
        FIGURES["Node status PATCH sent -> pool reconcile running (ms)"] = (
            f"p50 {p50:.1f}, max {max(lat):.1f} (n=30, informer -> queue -> worker)"
        )
        assert p50 < 50
    finally:
        assert ctrl.stop(timeout=10)
        nodes.stop()

"""``maxConcurrentPoolReconciles`` is the number of pool workers: that many pools are
reconciled at once, never more (a single pool is always serialised by its key)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from atomic_gang_provisioner.config import ServerSettings
from atomic_gang_provisioner.kube import KubeClient
from atomic_gang_provisioner.manager import Manager
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.runtime import Result
from atomic_gang_provisioner.settings import resolve
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import RecordingTransport
from tests.support.wait import wait_for


class Gate:
    """A reconcile that holds every pool until released, counting how many run at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[str] = set()
        self.peak = 0
        self.release = threading.Event()

    def reconcile(self, name: str) -> Result:  # replaces PoolReconciler.reconcile
        with self.lock:
            self.running.add(name)
            self.peak = max(self.peak, len(self.running))
        self.release.wait(30)
        with self.lock:
            self.running.discard(name)
        return Result()


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    g = Gate()
    monkeypatch.setattr(PoolReconciler, "reconcile", g.reconcile)
    yield g
    g.release.set()


def manager(*, setting: int, override: int | None = None) -> Manager:
    return Manager(
        settings=resolve(
            settings(maxConcurrentPoolReconciles=setting), ServerSettings(pool_workers=override)
        ),
        client=KubeClient(RecordingTransport()),
        cloud=FakeCloud.unused(),
        metrics=ProvisionerMetrics.create(),
    )


@pytest.mark.parametrize(
    ("setting", "override", "workers"),
    [
        pytest.param(3, None, 3, id="the-setting"),
        pytest.param(1, None, 1, id="one-at-a-time"),
        pytest.param(3, 2, 2, id="ATOMIC_GANG_PROVISIONER_POOL_WORKERS-overrides"),
    ],
)
def test_pool_workers_follow_max_concurrent_pool_reconciles(
    gate: Gate, setting: int, override: int | None, workers: int
) -> None:
    pool = manager(setting=setting, override=override).controllers.pool
    for i in range(8):
        pool.enqueue(f"pool-{i}")
    pool.start()
    try:
        wait_for(lambda: len(gate.running) == workers, timeout=10, what=f"{workers} in flight")
        # Each worker is one thread reconciling one key at a time: the bound is exact.
        names = {t.name for t in threading.enumerate() if t.name.startswith("pool-")}
        assert names == {f"pool-{i}" for i in range(workers)}
        assert pool.depth() == 8 - workers  # the rest wait in the queue
    finally:
        gate.release.set()
        assert pool.stop(timeout=10)
    assert gate.peak == workers

"""Issue 5 acceptance on the real control plane + simulated EC2: the happy path,
no pod before exact readiness, keep-warm reuse and expiry, claims, the finalizer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.kube.resource import EVENTS
from atomic_gang_provisioner.resources import JOBS, POOLS
from tests.e2e.provisioner.conftest import job, unique
from tests.e2e.provisioner.harness import Replicas, World, iter_pods
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def replica(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    reps = world.replicas(
        tmp_path_factory.mktemp("prov-lifecycle"), unique("lease"), joinDeadlineSeconds=300
    )
    reps.start("prov-a")
    wait_for(
        lambda: world.lease_holder(reps.lease).startswith("prov-a"),
        timeout=30,
        what="prov-a leading",
    )
    yield reps
    reps.stop_all()


def test_happy_path_then_keep_warm(world: World, replica: Replicas, namespace: str) -> None:
    pool = unique("happy")
    submitted = world.submit(job("happy", namespace, pool=pool, keep_warm_ttl="1h"))
    p = world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    assert len(p.status.instanceIds) == 4
    assert world.live(pool) == sorted(p.status.instanceIds)
    assert world.check(submitted)["state"] == "Pending"
    nodes = world.register_nodes(p)
    ready = world.wait_check(submitted, "Ready")
    assert ready["podSetUpdates"] == [
        {
            "name": "main",
            "nodeSelector": {keys.POOL: pool, keys.GROUP: p.status.activeGroup},
            "tolerations": [
                {"key": keys.GANG_TAINT, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
            ],
        }
    ]
    assert len(world.launches(pool)) == 1  # one RunInstances call, MinCount == MaxCount == 4
    pods = wait_for(
        lambda: (
            [q for q in iter_pods(world, namespace) if q["status"].get("phase") == "Succeeded"]
            or None
        ),
        timeout=60,
        what="pods completed",
    )
    assert {q["spec"]["nodeName"] for q in pods} <= set(nodes)
    warm = world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm")
    assert warm.spec.claim is None
    assert world.live(pool) == sorted(p.status.instanceIds)


def test_no_pod_before_exact_readiness(world: World, replica: Replicas, namespace: str) -> None:
    pool = unique("partial")
    submitted = world.submit(job("partial", namespace, pool=pool))
    p = world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    world.register_nodes(p, count=3)
    world.wait_pool(pool, lambda p: p.status.readyCount == 3, what="3 nodes Ready")

    def reports_three() -> dict[str, Any] | None:
        c = world.check(submitted)
        return c if "3/4 nodes Ready" in c.get("message", "") else None

    check = wait_for(reports_three, timeout=30, what="the check to report 3/4")
    assert check["state"] == "Pending"
    assert list(iter_pods(world, namespace)) == []


def test_keep_warm_reuse_then_expiry(world: World, replica: Replicas, namespace: str) -> None:
    pool = unique("warm")
    first = world.submit(job("first", namespace, pool=pool, keep_warm_ttl="20s"))
    p = world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    nodes = world.register_nodes(p)
    world.wait_check(first, "Ready")
    world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm")
    ids = world.live(pool)
    second = world.submit(job("second", namespace, pool=pool, keep_warm_ttl="3s"))
    world.wait_check(second, "Ready", timeout=30)
    assert len(world.launches(pool)) == 1  # reuse: no new launch
    assert world.live(pool) == ids
    world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm again")
    world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")
    assert world.live(pool) == []
    world.delete_nodes(nodes)


def test_second_claimant_retries_and_shape_conflict_is_rejected(
    world: World, replica: Replicas, namespace: str
) -> None:
    pool = unique("claims")
    owner = world.submit(job("owner", namespace, pool=pool))
    world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    other = world.submit(job("other", namespace, pool=pool))
    wait_for(
        lambda: (
            "in use by Workload" in (world.check(other).get("message") or "")
            or (world.workload(other) or {}).get("status", {}).get("requeueState")
        ),
        timeout=30,
        what="Retry for the second claimant",
    )
    bigger = world.submit(job("bigger", namespace, pool=pool, count=8))

    def deactivated() -> dict[str, Any] | None:
        w = world.workload(bigger)
        return w if w is not None and w.get("spec", {}).get("active") is False else None

    wl = wait_for(deactivated, timeout=30, what="Rejected (deactivated)")
    events = world.kube.list(EVENTS, namespace=namespace).items
    msgs = [e["message"] for e in events if e["involvedObject"]["name"] == wl["metadata"]["name"]]
    assert any("count (pool 4, this Job 8)" in m for m in msgs), msgs
    assert world.check(owner)["state"] == "Pending"


def test_finalizer_terminates_before_delete(
    world: World, replica: Replicas, namespace: str
) -> None:
    pool = unique("final")
    submitted = world.submit(job("final", namespace, pool=pool))
    p = world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    first = set(p.status.instanceIds)
    assert set(world.live(pool)) == first
    world.kube.delete(POOLS, pool)
    # The Job still waits, so a new pool object appears, but only after the old one's
    # finalizer terminated every instance of the first set.
    again = world.wait_pool(
        pool,
        lambda q: q.metadata["uid"] != p.metadata["uid"],
        what="the pool re-created for the waiting Job",
    )
    assert not first & set(world.live(pool))
    assert not first & set(again.status.instanceIds)
    world.kube.delete(
        JOBS, submitted["metadata"]["name"], namespace=namespace, propagation="Background"
    )


def test_replica_log_is_json(replica: Replicas) -> None:
    lines = [x for x in replica.log("prov-a").splitlines() if not x.startswith("--- devstack")]
    assert lines
    assert all(x.startswith("{") for x in lines[:20])
    assert Path(replica.settings).exists()

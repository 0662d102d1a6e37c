"""Issue 5 acceptance: shortfall and Retry, the join watchdog, health after a gang
formed. Short deadlines so the scenarios run in seconds."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from atomic_gang.resources import EVENTS
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import job, unique
from tests.e2e.provisioner.harness import Replicas, World, iter_pods
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def replica(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    reps = world.replicas(
        tmp_path_factory.mktemp("prov-faults"),
        unique("lease"),
        joinDeadlineSeconds=8,
        acquireAttemptsBeforeRetry=3,
        healthGraceSeconds=2,
    )
    reps.start("prov-f")
    wait_for(
        lambda: world.lease_holder(reps.lease).startswith("prov-f"),
        timeout=30,
        what="prov-f leading",
    )
    yield reps
    reps.stop_all()


def _events(
    world: World, namespace: str, reason: str, *, kind: str = "", name: str = ""
) -> list[str]:
    return [
        e["message"]
        for e in world.kube.list(EVENTS, namespace=namespace).items
        if e["reason"] == reason
        and (not kind or e["involvedObject"].get("kind") == kind)
        and (not name or e["involvedObject"].get("name") == name)
    ]


def _wait_event(
    world: World, namespace: str, reason: str, *, kind: str, name: str, text: str
) -> str:
    """Events are written asynchronously: wait for one about this object saying ``text``."""

    def probe() -> str | None:
        found = _events(world, namespace, reason, kind=kind, name=name)
        return next((m for m in found if text in m), None)

    return wait_for(probe, timeout=30, what=f"a {reason} event on {kind} {name}")


def test_shortfall_holds_at_zero_cost_until_capacity(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("short")
    pool = gnp(namespace, label)
    world.fake.set_capacity("us-east-1b", "p5.48xlarge", 3)  # a 4-gang cannot fit
    submitted = world.submit(
        job(
            "short",
            namespace,
            pool=label,
            instance_type="p5.48xlarge",
            availability_zones="us-east-1b",
        )
    )
    p = world.wait_pool(pool, lambda p: p.status.consecutiveShortfalls >= 1, what="a shortfall")
    assert p.status.phase == "Acquiring"
    assert world.live(pool) == []

    def holding() -> str | None:
        # Right after the shortfall the message names EC2's error; while the pool then
        # waits for the short cell's next try, it counts the failed attempts instead.
        m: str = world.check(submitted).get("message", "")
        shown = "InsufficientInstanceCapacity" in m or re.search(r"attempt \d/3 failed", m)
        return m if shown and "holding quota" in m else None

    msg = wait_for(holding, timeout=30, what="a message holding quota after the shortfall")
    assert "nothing billed" in msg
    world.fake.set_capacity("us-east-1b", "p5.48xlarge", 4)
    p = world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    world.register_nodes(p)
    world.wait_check(submitted, "Ready")
    assert len(world.live(pool)) == 4


def test_k_shortfalls_turn_into_retry(world: World, replica: Replicas, namespace: str) -> None:
    label = unique("retry")
    pool = gnp(namespace, label)
    world.fake.set_capacity("us-east-1c", "g6.xlarge", 0)
    submitted = world.submit(
        job(
            "retry",
            namespace,
            pool=label,
            instance_type="g6.xlarge",
            availability_zones="us-east-1c",
        )
    )

    def requeued() -> dict[str, Any] | None:
        wl = world.workload(submitted) or {}
        return wl if (wl.get("status") or {}).get("requeueState") else None

    wl = wait_for(requeued, timeout=90, what="Kueue requeue after Retry")
    assert any("3 consecutive failed attempts" in m for m in _events(world, namespace, "GangRetry"))
    assert world.live(pool) == []
    assert wl["status"]["requeueState"].get("requeueAt")


def test_join_watchdog_releases_and_reacquires(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("watchdog")
    pool = gnp(namespace, label)
    submitted = world.submit(job("watchdog", namespace, pool=label))
    first = world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    nodes = world.register_nodes(first, count=3)  # the 4th never joins
    second = world.wait_pool(
        pool,
        lambda p: (
            p.status.phase == "Joining"
            and p.status.activeGeneration != first.status.activeGeneration
        ),
        timeout=60,
        what="a fresh set after the join deadline",
    )
    assert not set(first.status.instanceIds) & set(world.live(pool))
    assert world.check(submitted)["state"] == "Pending"
    # Recorded on the (cluster-scoped) pool, whose Events live in the controller's own
    # namespace, and on the claimant's Job in its own namespace.
    on_pool = (world.pool_events_namespace, "GangNodePool", pool)
    for ns, kind, name in (on_pool, (namespace, "Job", "watchdog")):
        _wait_event(world, ns, "JoinTimeout", kind=kind, name=name, text="Only 3/4 nodes")
    world.delete_nodes(nodes)
    world.register_nodes(second)
    world.wait_check(submitted, "Ready")


def test_lost_instance_of_a_job_without_repair_degrades_and_requeues_with_a_fresh_gang(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("health")
    pool = gnp(namespace, label)
    submitted = world.submit(job("health", namespace, pool=label, runs_for="1h", repair="never"))
    p = world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    nodes = world.register_nodes(p)
    world.wait_check(submitted, "Ready")
    wait_for(
        lambda: (
            sum(q["status"].get("phase") == "Running" for q in iter_pods(world, namespace)) == 4
        ),
        timeout=60,
        what="4 pods running",
    )
    victim = p.status.instanceIds[0]
    world.ec2.terminate_instances(InstanceIds=[victim])  # behind our back
    world.delete_nodes([nodes[0]])  # as the cloud node-lifecycle controller would
    wait_for(
        lambda: any("Gang degraded" in m for m in _events(world, namespace, "GangRetry")),
        timeout=60,
        what="Retry for the degraded gang",
    )
    fresh = world.wait_pool(
        pool,
        lambda q: (
            q.status.phase == "Joining" and q.status.activeGeneration != p.status.activeGeneration
        ),
        timeout=90,
        what="a fresh gang",
    )
    assert not set(p.status.instanceIds) & set(world.live(pool))
    world.delete_nodes(nodes[1:])
    new_nodes = world.register_nodes(fresh)
    world.wait_check(submitted, "Ready", timeout=60)
    running = wait_for(
        lambda: (
            [
                q
                for q in iter_pods(world, namespace)
                if q["status"].get("phase") == "Running"
                and not q["metadata"].get("deletionTimestamp")
            ]
            if sum(1 for q in iter_pods(world, namespace) if q["status"].get("phase") == "Running")
            == 4
            else None
        ),
        timeout=60,
        what="4 pods running on the fresh gang",
    )
    assert {q["spec"]["nodeName"] for q in running} <= set(new_nodes)

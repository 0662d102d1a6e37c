"""Issue 5 acceptance on the real control plane + simulated EC2: the happy path,
no pod before exact readiness, keep-warm reuse and expiry, claims, the finalizer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang.resources import EVENTS, JOBS, POOLS
from atomic_gang_devstack import dev_objects
from atomic_gang_provisioner.kube import NotFoundError
from tests.e2e.jobs import plain_job
from tests.e2e.names import gnp
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


def events_on(world: World, obj: dict[str, Any], reason: str, kind: str) -> list[dict[str, Any]]:
    """Events with ``reason`` about exactly this object (kind, name and uid)."""
    meta = obj["metadata"]
    items = world.kube.list(
        EVENTS, namespace=meta["namespace"], field_selector=f"involvedObject.name={meta['name']}"
    ).items
    return [
        e
        for e in items
        if e["reason"] == reason
        and e["involvedObject"].get("kind") == kind
        and e["involvedObject"].get("uid") == meta["uid"]
    ]


def wait_event(world: World, obj: dict[str, Any], reason: str, kind: str) -> dict[str, Any]:
    """Events are written asynchronously by the controller's recorder: wait for one."""
    found = wait_for(
        lambda: events_on(world, obj, reason, kind),
        timeout=30,
        what=f"a {reason} event on {kind} {obj['metadata']['name']}",
    )
    return found[0]


def test_happy_path_then_keep_warm(world: World, replica: Replicas, namespace: str) -> None:
    label = unique("happy")
    pool = gnp(namespace, label)
    submitted = world.submit(job("happy", namespace, pool=label, keep_warm_ttl="1h"))
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
            "tolerations": [{"key": keys.GANG_TAINT, "operator": "Equal", "value": pool}],
        }
    ]
    assert len(world.launches(pool)) == 1  # one RunInstances call, MinCount == MaxCount == 4
    # The pool's transitions reach the Job the user describes, not only the pool.
    satisfied = wait_event(world, submitted, "Satisfied", "Job")
    assert satisfied["message"] == (
        f"Pool {pool}: All 4 nodes of group {p.status.activeGroup} are Ready"
    )
    assert wait_event(world, submitted, "Launched", "Job")["message"].startswith(
        f"Pool {pool}: Launched 4×"
    )
    assert "pods are pinned" in wait_event(world, submitted, "GangReady", "Job")["message"]
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
    label = unique("partial")
    pool = gnp(namespace, label)
    submitted = world.submit(job("partial", namespace, pool=label))
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
    label = unique("warm")
    pool = gnp(namespace, label)
    first = world.submit(job("first", namespace, pool=label, keep_warm_ttl="20s"))
    p = world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    nodes = world.register_nodes(p)
    world.wait_check(first, "Ready")
    world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm")
    ids = world.live(pool)
    second = world.submit(job("second", namespace, pool=label, keep_warm_ttl="3s"))
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
    label = unique("claims")
    pool = gnp(namespace, label)
    owner = world.submit(job("owner", namespace, pool=label))
    world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    owner_wl = wait_for(lambda: world.workload(owner), timeout=30, what="the owner's Workload")
    other = world.submit(job("other", namespace, pool=label))
    other_wl = wait_for(lambda: world.workload(other), timeout=30, what="the Workload")
    retry = wait_event(world, other_wl, "GangRetry", "Workload")
    assert retry["message"] == (
        f"Pool {pool} is in use by Workload {namespace}/{owner_wl['metadata']['name']}; "
        "releasing quota and retrying in 30s"
    )

    def requeued() -> dict[str, Any] | None:
        wl = world.workload(other) or {}
        return wl if ((wl.get("status") or {}).get("requeueState") or {}).get("requeueAt") else None

    wait_for(requeued, timeout=30, what="Kueue requeues the second claimant after Retry")
    claimed = world.pool(pool)
    assert claimed is not None
    assert claimed.spec.claim is not None
    assert claimed.spec.claim.uid == owner_wl["metadata"]["uid"]  # the claim never moved
    bigger = world.submit(job("bigger", namespace, pool=label, count=8))

    def deactivated() -> dict[str, Any] | None:
        w = world.workload(bigger)
        return w if w is not None and w.get("spec", {}).get("active") is False else None

    wl = wait_for(deactivated, timeout=30, what="Rejected (deactivated)")

    def rejection() -> bool:  # Events are written asynchronously, after the apply
        events = world.kube.list(EVENTS, namespace=namespace).items
        return any(
            e["involvedObject"]["name"] == wl["metadata"]["name"]
            and "count (pool 4, this Job 8)" in e["message"]
            for e in events
        )

    wait_for(rejection, timeout=30, what="an Event naming the count that conflicts")
    assert world.check(owner)["state"] == "Pending"


def test_a_job_without_gang_keys_queued_to_our_check_is_rejected(
    world: World, replica: Replicas, namespace: str
) -> None:
    """The jobs cache only holds pool-labelled Jobs; this one must still be found."""
    plain = plain_job(unique("plain"), namespace)
    plain["metadata"]["labels"] = {keys.QUEUE_NAME_LABEL: dev_objects.LOCAL_QUEUE}
    submitted = world.submit(plain)

    def deactivated() -> dict[str, Any] | None:
        w = world.workload(submitted)
        return w if w is not None and w.get("spec", {}).get("active") is False else None

    wl = wait_for(deactivated, timeout=60, what="Kueue deactivates the Rejected Workload")
    for obj, kind in ((wl, "Workload"), (submitted, "Job")):
        message = wait_event(world, obj, "GangRejected", kind)["message"]
        assert "no atomic-gang annotations or pool label" in message
        assert keys.POOL in message
        assert keys.COUNT in message
    assert world.kube.get(JOBS, plain["metadata"]["name"], namespace=namespace)["spec"]["suspend"]
    assert list(iter_pods(world, namespace)) == []


def test_finalizer_terminates_before_delete(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("final")
    pool = gnp(namespace, label)
    submitted = world.submit(job("final", namespace, pool=label))
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


def test_a_deleted_fleet_pool_takes_its_own_launch_template_with_it(
    world: World, replica: Replicas, namespace: str
) -> None:
    """Fleet mode launches from a template of the pool's own (tagged with it); the
    shared templates of runinstances shapes are pruned when idle, a pool's own is not:
    it goes when the pool does, before the finalizer is removed."""
    label = unique("fleet-lt")
    pool = gnp(namespace, label)
    submitted = world.submit(job("fleet-lt", namespace, pool=label, count=2, mode="fleet"))

    def own_templates() -> list[str]:
        found = world.ec2.describe_launch_templates(
            Filters=[{"Name": f"tag:{keys.POOL}", "Values": [pool]}]
        )["LaunchTemplates"]
        return [str(lt["LaunchTemplateName"]) for lt in found]

    world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
    assert own_templates()  # the fleet launched from a template of the pool's own
    world.kube.delete(
        JOBS, submitted["metadata"]["name"], namespace=namespace, propagation="Background"
    )
    # No claimant left to create the pool again once it is deleted.
    wait_for(lambda: world.workload(submitted) is None, timeout=60, what="the Workload gone")
    world.kube.delete(POOLS, pool)

    def gone() -> bool:
        try:
            world.kube.get(POOLS, pool)
        except NotFoundError:
            return True
        return False

    wait_for(gone, timeout=60, what="the pool deleted")
    assert own_templates() == []
    assert world.live(pool) == []


def test_replica_log_is_json(replica: Replicas) -> None:
    lines = [x for x in replica.log("prov-a").splitlines() if not x.startswith("--- devstack")]
    assert lines
    assert all(x.startswith("{") for x in lines[:20])
    assert Path(replica.settings).exists()

"""A dropped join (the watchdog), and a node of a running gang lost (health) by a
Job that opted out of repair (``repair: never``): both end in a fresh full gang. No pod
starts on a partial gang, and the pods left on a broken gang stop within the health
grace plus a bounded margin.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from atomic_gang import keys
from tests.e2e.names import gnp
from tests.e2e.system.conftest import HEALTH_GRACE_SECONDS, unique
from tests.e2e.system.harness import (
    System,
    assert_no_managed_instances_left,
    condition,
    sample_job,
    sampling,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
# After a node is lost, the rest of its gang's pods stop within the health grace plus
# this: the provisioner sees the loss, its check goes Retry, Kueue evicts (suspends the
# Job), the Job controller deletes the pods and kwok stops them.
STOP_MARGIN_SECONDS = 15.0


def _picture(system: System, namespace: str, pool: str) -> dict[str, Any]:
    """Pods (name → node, phase) and the gang's Nodes (name → group, Ready) at one moment
    (``t``: monotonic time taken before either is read)."""
    t = time.monotonic()
    nodes = {
        name: (n["metadata"]["labels"].get(keys.GROUP), condition(n, "Ready") is not None)
        for name, n in system.gang_nodes(pool).items()
    }
    pods = {
        p["metadata"]["name"]: (p["spec"].get("nodeName"), p["status"].get("phase"))
        for p in system.pods(namespace)
    }
    return {"t": t, "nodes": nodes, "pods": pods}


def _no_pod_started_on_a_partial_gang(samples: list[dict[str, Any]], count: int) -> None:
    seen: set[str] = set()
    for s in samples:
        for pod, (node, phase) in s["pods"].items():
            if phase != "Running" or pod in seen:
                continue
            seen.add(pod)
            group = s["nodes"].get(node, (None, False))[0]
            ready = sum(1 for g, r in s["nodes"].values() if g == group and r)
            assert group is not None, f"{pod} first seen Running on a non-gang node {node}"
            assert ready == count, f"{pod} first seen Running with {ready}/{count} of {group}"
    assert seen


def _running_of(samples: list[dict[str, Any]], group: str) -> list[tuple[float, str]]:
    """(t, pod) for every sample showing Running a pod once seen on a Node of ``group``.

    Pods are matched by name: a later gang's Nodes can reuse the names of this one's
    (names come from private IPs, which EC2 hands out again)."""
    mine = {
        pod
        for s in samples
        for pod, (node, _) in s["pods"].items()
        if s["nodes"].get(node, (None,))[0] == group
    }
    return [
        (s["t"], pod)
        for s in samples
        for pod, (_, phase) in s["pods"].items()
        if phase == "Running" and pod in mine
    ]


def test_a_dropped_join_releases_the_set_and_the_job_still_completes(
    system: System, namespace: str
) -> None:
    label = unique("watchdog")
    pool = gnp(namespace, label)
    system.sim.drop(pool=pool, count=1)  # nodeadm fails on one instance of the first set
    with sampling(lambda: _picture(system, namespace, pool)) as samples:
        job = system.world.submit(sample_job("watchdog", namespace, pool=label, keep_warm_ttl="2s"))
        first = system.world.wait_pool(
            pool, lambda p: len(p.status.instanceIds) == 4, what="the first set launched"
        )
        second = system.world.wait_pool(
            pool,
            lambda p: p.status.activeGeneration not in (0, first.status.activeGeneration),
            timeout=60,
            what="a fresh set after the join deadline",
        )
        wait_for(lambda: system.complete(job), timeout=90, what="the Job complete")
    state = system.sim.state()
    seen = {**state["gone"], **state["instances"]}
    dropped = [i for i, t in seen.items() if t["phase"] == "dropped"]
    assert len(dropped) == 1
    assert dropped[0] in first.status.instanceIds
    assert not set(first.status.instanceIds) & set(system.world.live(pool))
    assert any(r == "JoinTimeout" for r, _ in system.pool_events(pool))
    groups = {samples[-1]["nodes"].get(node, ("?",))[0] for node, _ in samples[-1]["pods"].values()}
    assert groups == {second.status.activeGroup}
    _no_pod_started_on_a_partial_gang(samples, 4)
    assert_no_managed_instances_left(system)


def test_a_lost_node_of_a_job_without_repair_requeues_the_workload_onto_a_fresh_gang(
    system: System, namespace: str, record_property: Any
) -> None:
    label = unique("health")
    pool = gnp(namespace, label)
    with sampling(lambda: _picture(system, namespace, pool)) as samples:
        spec = sample_job(
            "health", namespace, pool=label, runs_for="25s", keep_warm_ttl="2s", repair="never"
        )
        job = system.world.submit(spec)
        wait_for(
            lambda: sum(ph == "Running" for _, ph in system_pods(system, namespace)) == 4,
            timeout=90,
            what="4 pods running",
        )
        first = system.world.pool(pool)
        assert first is not None
        victim = first.status.instanceIds[0]
        # The sampler runs on its own thread: let it record the full gang running
        # before the kill, so "stopped within the bound" is measured from a seen state.
        wait_for(
            lambda: len({p for _, p in _running_of(list(samples), first.status.activeGroup)}) == 4,
            timeout=30,
            what="the sampler to see the first gang running",
        )
        killed_at = time.monotonic()
        system.sim.terminate(victim)  # behind the provisioner's back
        fresh = system.world.wait_pool(
            pool,
            lambda p: (
                p.status.phase == "Satisfied"
                and p.status.activeGeneration != first.status.activeGeneration
            ),
            timeout=90,
            what="a fresh gang",
        )
        wait_for(lambda: system.complete(job), timeout=120, what="the Job complete")
    wl_events = system.events(namespace, job_workload(system, job))
    assert any("Gang degraded" in m for _, m in wl_events)
    # Evicted, requeued, admitted again (Kueue's second Admitted event may be folded into
    # the first one's count when the messages match).
    assert system.event_count(namespace, job_workload(system, job), "Admitted") >= 2
    wl = system.world.workload(job) or {}
    evictions = ((wl.get("status") or {}).get("schedulingStats") or {}).get("evictions") or []
    assert any(e.get("reason") == "AdmissionCheck" and e.get("count", 0) >= 1 for e in evictions)
    assert not set(first.status.instanceIds) & set(system.world.live(pool))
    assert fresh.status.activeGroup != first.status.activeGroup
    _no_pod_started_on_a_partial_gang(samples, 4)

    old = _running_of(samples, first.status.activeGroup)
    assert any(t < killed_at for t, _ in old)  # the probe did see the first gang running
    last = max(t for t, _ in old) - killed_at
    record_property("old_gang_last_running_after_kill_seconds", round(last, 2))
    bound = HEALTH_GRACE_SECONDS + STOP_MARGIN_SECONDS
    late = sorted({pod for t, pod in old if t > killed_at + bound})
    assert not late, f"pods of the broken gang still Running {bound}s after the kill: {late}"
    assert_no_managed_instances_left(system)


def system_pods(system: System, namespace: str) -> list[tuple[str, str]]:
    return [
        (p["spec"].get("nodeName") or "", p["status"].get("phase") or "")
        for p in system.pods(namespace)
        if not p["metadata"].get("deletionTimestamp")
    ]


def job_workload(system: System, job: dict[str, Any]) -> str:
    wl = system.world.workload(job)
    assert wl is not None
    return str(wl["metadata"]["name"])

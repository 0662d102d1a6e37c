"""A gang survives a bad node: a GPU the kubelet does not see fail (the node monitoring
agent's ``AcceleratedHardwareReady=False``) or an instance lost behind the provisioner's
back is replaced by one launch of 1, the other 3 instances kept, the Workload admitted
throughout, and the Job (whose ``backoffLimit`` restarts its evicted pod) completes on
the repaired gang. Two nodes broken at once is past ``repair.maxNodes`` here: the whole
set goes and the Workload is requeued onto a fresh gang."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from atomic_gang.resources import JOBS
from atomic_gang_devstack import procs
from tests.e2e.names import gnp
from tests.e2e.system.conftest import unique
from tests.e2e.system.harness import (
    System,
    assert_no_managed_instances_left,
    crashing_leader,
    sample_job,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
GPU = "AcceleratedHardwareReady"


def _job(label: str, namespace: str, runs_for: str = "40s") -> dict[str, Any]:
    """The sample Job named as its pool ``label``, each pod ``runs_for`` long, allowed to
    restart an evicted pod."""
    spec = sample_job(label, namespace, pool=label, runs_for=runs_for, keep_warm_ttl="2s")
    spec["spec"]["backoffLimit"] = 2
    return spec


def _running(system: System, namespace: str) -> int:
    return sum(p["status"].get("phase") == "Running" for p in system.pods(namespace))


def _launches(system: System, pool: str) -> list[tuple[str, str]]:
    calls = system.controller_calls("RunInstances", pool)
    ok = [c for c in calls if c["outcome"] == "ok"]
    return [(c["params"]["MinCount"], c["params"]["MaxCount"]) for c in ok]


def _workload_name(system: System, job: dict[str, Any]) -> str:
    wl = system.world.workload(job)
    assert wl is not None
    return str(wl["metadata"]["name"])


def _repaired(
    system: System, namespace: str, label: str, breaks: Any, *, restarts: bool = True
) -> None:
    """``restarts``: the broken node's pod is evicted and the Job restarts it (kwok goes on
    running a pod whose Node was deleted, so a lost instance's pod may finish there)."""
    pool = gnp(namespace, label)
    job = system.world.submit(_job(label, namespace))
    wait_for(lambda: _running(system, namespace) == 4, timeout=90, what="4 pods running")
    first = system.world.pool(pool)
    assert first is not None
    victim, *kept = first.status.instanceIds
    breaks(victim)
    whole = system.world.wait_pool(
        pool,
        lambda p: p.status.phase == "Satisfied" and p.status.repairs == 1,
        timeout=90,
        what="the gang repaired",
    )
    wait_for(lambda: system.complete(job), timeout=180, what="the Job complete")

    assert _launches(system, pool) == [("4", "4"), ("1", "1")]  # one launch of 1, no more
    assert set(kept) <= set(whole.status.instanceIds)  # the healthy three untouched
    assert victim not in whole.status.instanceIds
    assert victim not in system.world.live(pool)
    assert whole.status.activeGroup == first.status.activeGroup  # the pods' pin holds
    wl = _workload_name(system, job)
    reasons = [r for r, _ in system.events(namespace, wl)]
    assert "NodeBroken" in reasons
    assert "NodeReplaced" in reasons
    assert system.event_count(namespace, wl, "Admitted") == 1  # never evicted
    if restarts:
        assert (system.job(job)["status"].get("failed") or 0) >= 1  # its pod was restarted
    system.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")
    assert system.world.live(pool) == []


def test_a_failed_gpu_is_replaced_in_place_and_the_job_completes(
    system: System, namespace: str
) -> None:
    label = unique("repair-gpu")
    _repaired(
        system,
        namespace,
        label,
        lambda iid: system.sim.set_condition(iid, GPU, "False", reason="NvidiaXID79Error"),
    )
    pool = gnp(namespace, label)
    text = " ".join(m for r, m in system.pool_events(pool) if r == "NodeBroken")
    assert f"{GPU}=False (NvidiaXID79Error)" in text


def test_a_terminated_instance_is_replaced_in_place_and_the_job_completes(
    system: System, namespace: str
) -> None:
    label = unique("repair-lost")
    _repaired(system, namespace, label, system.sim.terminate, restarts=False)
    pool = gnp(namespace, label)
    text = " ".join(m for r, m in system.pool_events(pool) if r == "NodeBroken")
    assert "gone, terminated or stopped" in text


def test_two_broken_at_once_is_past_repair_max_nodes_and_requeues_onto_a_fresh_gang(
    system: System, namespace: str
) -> None:
    label = unique("repair-max")
    pool = gnp(namespace, label)
    job = system.world.submit(_job(label, namespace))
    wait_for(lambda: _running(system, namespace) == 4, timeout=90, what="4 pods running")
    first = system.world.pool(pool)
    assert first is not None
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the same for both
    for iid in first.status.instanceIds[:2]:
        system.sim.set_condition(iid, GPU, "False", reason="NvidiaXID48Error", since=since)
    fresh = system.world.wait_pool(
        pool,
        lambda p: (
            p.status.phase == "Satisfied"
            and p.status.activeGeneration != first.status.activeGeneration
        ),
        timeout=180,  # a release, Kueue's requeue, a launch and a join, on a loaded box
        what="a fresh gang",
    )
    wait_for(lambda: system.complete(job), timeout=180, what="the Job complete")
    assert _launches(system, pool) == [("4", "4"), ("4", "4")]  # released whole, no repair
    assert not set(first.status.instanceIds) & set(system.world.live(pool))
    assert fresh.status.activeGroup != first.status.activeGroup
    said = [m for r, m in system.pool_events(pool) if r == "RepairTooManyNodes"]
    assert said
    assert "more than repair.maxNodes (1)" in said[0]
    wl = _workload_name(system, job)
    assert system.event_count(namespace, wl, "Admitted") >= 2  # requeued, admitted again
    system.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")
    assert_no_managed_instances_left(system)


def test_a_replacement_ec2_cannot_give_falls_back_after_the_deadline_leaking_nothing(
    system: System, namespace: str
) -> None:
    """No room for the one replacement: the repair retries until repair.deadlineSeconds
    (60 s here), then the whole set goes and the Workload is requeued; nothing leaks."""
    label = unique("repair-short")
    pool = gnp(namespace, label)
    zone, itype = "us-east-1a", "p4d.24xlarge"
    # Pods long enough that no kept node frees up for the evicted pod's restart (a pod that
    # finished no longer counts against one-pod-per-node): the Job needs the replacement.
    system.world.submit(_job(label, namespace, runs_for="600s"))
    wait_for(lambda: _running(system, namespace) == 4, timeout=90, what="4 pods running")
    first = system.world.pool(pool)
    assert first is not None
    # Only this gang holds instances (earlier tests' warm sets are gone), so the capacity
    # set below leaves no room that a release elsewhere could open.
    wait_for(lambda: set(system.managed_live().values()) == {pool}, timeout=60, what="alone")
    system.fake.set_capacity(zone, itype, 3)  # the broken one's slot is taken at once
    try:
        system.sim.set_condition(
            first.status.instanceIds[0], GPU, "False", reason="NvidiaXID79Error"
        )
        system.world.wait_pool(
            pool, lambda p: p.status.phase == "Repairing", timeout=30, what="repairing"
        )
        # Degraded lasts until Kueue evicts the Workload (a second or so): its Event stays.
        said = wait_for(
            lambda: [m for r, m in system.pool_events(pool) if r == "RepairDeadline"],
            timeout=120,
            what="the repair given up at its deadline",
        )
        assert "repair.deadlineSeconds (60s)" in said[0]
        system.world.wait_pool(
            pool, lambda p: not p.status.instanceIds, timeout=60, what="the set released"
        )
        assert system.world.live(pool) == []  # the kept three released too, nothing leaked
        assert [c for c in _launches(system, pool) if c != ("4", "4")] == []  # no replacement
    finally:
        system.fake.set_capacity(zone, itype, None)
    system.world.wait_pool(
        pool,
        lambda p: (
            p.status.phase == "Satisfied"
            and p.status.activeGeneration != first.status.activeGeneration
        ),
        timeout=120,
        what="a fresh gang for the requeued Workload",
    )
    system.kube.delete(JOBS, label, namespace=namespace, propagation="Background")
    system.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")
    assert_no_managed_instances_left(system)


def test_the_controller_killed_after_the_replacement_launch_adopts_it_never_a_second(
    replicas_back: System, namespace: str
) -> None:
    """The leader dies between EC2's answer to the repair's launch and its status write:
    the next leader's launch carries the same generation (tag and ClientToken) and adopts
    the replacement: one replacement, not two."""
    system = replicas_back
    label = unique("repair-crash")
    pool = gnp(namespace, label)
    job = system.world.submit(_job(label, namespace))
    wait_for(lambda: _running(system, namespace) == 4, timeout=90, what="4 pods running")
    first = system.world.pool(pool)
    assert first is not None
    crashy = crashing_leader(system, "crashy-repair")
    victim = first.status.instanceIds[0]
    system.sim.set_condition(victim, GPU, "False", reason="NvidiaXID79Error")
    wait_for(lambda: procs.exit_code(crashy) is not None, timeout=60, what="the crash")
    stuck = system.world.pool(pool)
    assert stuck is not None
    assert stuck.status.phase == "Repairing"
    assert stuck.status.repair is not None
    assert stuck.status.repair.replacements == []  # launched at EC2, never recorded
    system.revive()
    whole = system.world.wait_pool(
        pool,
        lambda p: p.status.phase == "Satisfied" and p.status.repairs == 1,
        timeout=90,
        what="the replacement adopted",
    )
    ever = system.ever_launched(pool)
    assert len(ever) == 5  # the gang's 4 and one replacement: never a second
    assert set(whole.status.instanceIds) == set(ever) - {victim}
    repairs = [c for c in system.controller_calls("RunInstances", pool) if c["outcome"] == "ok"]
    tokens = {c["params"]["ClientToken"] for c in repairs if c["params"]["MinCount"] == "1"}
    assert len(tokens) == 1
    wait_for(lambda: system.complete(job), timeout=180, what="the Job complete")
    system.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")
    assert_no_managed_instances_left(system)

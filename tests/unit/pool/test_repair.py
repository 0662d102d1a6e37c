"""Repair in place: k broken nodes of a claimed gang are terminated and replaced by one
launch of k in the gang's shape, zone and group, the N−k healthy ones untouched; past a
limit the whole set goes and the claimant gets Retry."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api import conditions as c
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.values import (
    AcquireResult,
    Instance,
    Launched,
    ReleaseResult,
    Shortfall,
    TopologyRead,
    ZoneAttempt,
)
from atomic_gang_provisioner.pool.driver import WRITE_AHEAD_REQUEUE, Decision
from atomic_gang_provisioner.pool.model import ConditionRule, NodeCondition, NodeView
from atomic_gang_provisioner.pool.story import FindByTag, Terminate
from tests.support.pools import (
    IDS,
    KEY,
    KNOBS,
    T0,
    World,
    decide,
    instances,
    launch_asked,
    launched,
    nodes,
    release_asked,
)

GPU_RULE = ConditionRule("AcceleratedHardwareReady", "False", timedelta(seconds=60))
HEALTH = replace(KNOBS, health_conditions=(GPU_RULE,), repair_deadline=timedelta(seconds=900))
NEW = "i-0000000000000009"
GROUP = launched().status.activeGroup


def gpu_failed(
    views: tuple[NodeView, ...], index: int, since: datetime = T0
) -> tuple[NodeView, ...]:
    bad = NodeCondition(
        type="AcceleratedHardwareReady", status="False", reason="NvidiaXID79Error", since=since
    )
    out = list(views)
    out[index] = replace(out[index], conditions=(bad,))
    return tuple(out)


def world(views: tuple[NodeView, ...], **answers: Any) -> World:
    return replace(World(nodes=views, knobs=HEALTH), **answers)


def replacement(iid: str = NEW) -> Instance:
    return replace(instances()[0], instance_id=iid)


def broken_gang() -> tuple[Decision, GangNodePool]:
    """A Satisfied gang whose first node's GPU failed 61 s ago: the decision, and the pool."""
    p = launched(phase="Satisfied", readyCount=4, satisfiedAt=T0)
    views = gpu_failed(nodes(4), 0)
    return decide(p, world(views), T0 + timedelta(seconds=61)), p


def stored(p: GangNodePool, decision: Decision) -> GangNodePool:
    return p.model_copy(update={"status": decision.status})


def test_a_bad_health_condition_within_its_grace_is_waited_for() -> None:
    p = launched(phase="Satisfied", readyCount=4, satisfiedAt=T0)
    views = gpu_failed(nodes(4), 0)
    decision = decide(p, world(views), T0 + timedelta(seconds=20))
    assert decision.status.phase == "Satisfied"
    assert decision.requeue_after == 40  # wakes when the grace ends
    assert decision.taints == ()


def test_a_failed_gpu_breaks_its_node_taints_it_and_starts_a_repair() -> None:
    decision, _ = broken_gang()
    s = decision.status
    assert s.phase == "Repairing"
    assert s.repair is not None
    (broken,) = s.repair.broken
    assert broken.instanceId == IDS[0]
    assert broken.reason == "NodeUnhealthy"
    assert broken.detail == "AcceleratedHardwareReady=False (NvidiaXID79Error)"
    assert decision.taints == ("ip-10-0-0-0",)
    # Write-ahead: the repair is stored before anything is terminated.
    assert isinstance(decision.waiting_on, Terminate)
    assert decision.requeue_after == WRITE_AHEAD_REQUEUE
    assert [e.reason for e in decision.events] == ["NodeBroken"]
    assert "1 of 4 node(s) broken" in decision.events[0].message
    assert "3 kept" in decision.events[0].message


def test_the_claimant_stays_ready_and_is_told_of_the_repair() -> None:
    decision, _ = broken_gang()
    ready = next(x for x in decision.status.conditions if x.type == c.READY)
    degraded = next(x for x in decision.status.conditions if x.type == c.DEGRADED)
    assert ready.status == "True"
    assert ready.reason == "Repairing"
    assert ready.message.startswith("Repairing 1 of 4 nodes of group")
    assert "AcceleratedHardwareReady=False (NvidiaXID79Error) since 12:00:00Z" in ready.message
    assert "3 kept" in ready.message
    assert degraded.status == "False"


def test_only_the_broken_instance_is_terminated_then_one_launch_of_one_in_the_gangs_group() -> None:
    decision, p = broken_gang()
    p = stored(p, decision)
    views = gpu_failed(nodes(4), 0)
    later = T0 + timedelta(seconds=62)
    asked = release_asked(decide(p, world(views), later))
    assert asked is not None
    assert asked.instance_ids == (IDS[0],)  # the three healthy ones untouched
    released = world(views, release=ReleaseResult(terminated=(IDS[0],)))
    request = launch_asked(decide(p, released, later))
    assert request is not None
    assert request.spec.count == 1
    assert request.spec.instance_type == "p4d.24xlarge"
    assert request.generation == p.status.acquireGeneration  # its own ClientTokens
    assert request.repair is not None
    assert request.repair.group == GROUP
    assert request.repair.zones == ("us-east-1a",)


def _launched(p: GangNodePool, views: tuple[NodeView, ...], result: AcquireResult) -> Decision:
    answers = world(views, release=ReleaseResult(terminated=(IDS[0],)), launch=result)
    return decide(p, answers, T0 + timedelta(seconds=62))


def test_the_replacement_is_recorded_with_the_kept_set_and_joins_as_the_gang() -> None:
    decision, p = broken_gang()
    p = stored(p, decision)
    views = gpu_failed(nodes(4), 0)
    result = Launched(instances=(replacement(),), client_token="t")
    out = _launched(p, views, result)
    s = out.status
    assert s.phase == "Repairing"
    assert s.instanceIds == [*IDS[1:], NEW]
    assert s.acquireGeneration == p.status.acquireGeneration + 1
    assert s.repair is not None
    assert s.repair.replacements == [NEW]
    assert [e.reason for e in out.events] == ["RepairLaunched"]
    # All four Ready again (three kept, one new in the gang's group): whole again.
    p = stored(p, out)
    whole = (*nodes(4)[1:], replace(nodes(1)[0], name="ip-10-0-0-9", instance_id=NEW))
    where = TopologyRead(nodes=tuple((i, ("nn-1", "nn-2")) for i in (*IDS[1:], NEW)))
    done = decide(p, world(whole, topology=where), T0 + timedelta(seconds=200))
    assert done.status.phase == "Satisfied"
    assert done.status.repairs == 1
    assert done.status.repair is None
    assert [e.reason for e in done.events] == ["NodeReplaced"]
    assert launch_asked(done) is None
    assert sorted(done.status.networkNodes or {}) == sorted([*IDS[1:], NEW])  # read again
    assert done.labels  # the replacement gets the layer labels the first set got


def test_a_short_replacement_backs_off_and_past_the_deadline_releases_the_whole_set() -> None:
    decision, p = broken_gang()
    p = stored(p, decision)
    views = gpu_failed(nodes(4), 0)
    short = Shortfall(
        attempts=(ZoneAttempt(zone="us-east-1a", code="InsufficientInstanceCapacity", message=""),)
    )
    out = _launched(p, views, short)
    s = out.status
    assert s.phase == "Repairing"
    assert s.repair is not None
    assert s.repair.attempts == 1
    assert s.nextAttemptAt is not None
    assert s.instanceIds == IDS[1:]  # the broken one is gone, the rest kept
    p = stored(p, out)
    late = decide(p, world(views[1:], found=()), T0 + timedelta(seconds=61 + 900))
    s = late.status
    assert s.phase == "Degraded"
    assert s.degradedClaimKey == KEY
    assert s.lastErrorReason == "RepairDeadline"
    assert "repair.deadlineSeconds (900s)" in s.lastError
    assert isinstance(late.waiting_on, FindByTag | Terminate)
    assert "RepairDeadline" in [e.reason for e in late.events]


def test_more_broken_nodes_than_repair_max_nodes_releases_the_whole_set() -> None:
    p = launched(phase="Satisfied", readyCount=4, satisfiedAt=T0)
    views = gpu_failed(gpu_failed(nodes(4), 0), 1)
    knobs = replace(HEALTH, repair_max_nodes=1)
    decision = decide(p, replace(world(views), knobs=knobs), T0 + timedelta(seconds=61))
    s = decision.status
    assert s.phase == "Degraded"
    assert s.lastErrorReason == "RepairTooManyNodes"
    assert "more than repair.maxNodes (1)" in s.lastError
    assert decision.taints == ("ip-10-0-0-0", "ip-10-0-0-1")
    assert launch_asked(decision) is None


def test_a_claim_past_max_repairs_releases_the_whole_set() -> None:
    p = launched(phase="Satisfied", readyCount=4, satisfiedAt=T0, repairs=5)
    decision = decide(p, world(gpu_failed(nodes(4), 0)), T0 + timedelta(seconds=61))
    assert decision.status.phase == "Degraded"
    assert decision.status.lastErrorReason == "RepairLimit"


def test_a_job_that_opted_out_is_released_whole_as_before() -> None:
    p = launched(phase="Satisfied", readyCount=4, satisfiedAt=T0, repair="never")
    decision = decide(p, world(gpu_failed(nodes(4), 0)), T0 + timedelta(seconds=61))
    s = decision.status
    assert s.phase == "Degraded"
    assert s.lastErrorReason == "NodeUnhealthy"
    assert "repair: never" in s.lastError


def test_a_crash_after_the_launch_replays_the_same_generation() -> None:
    """The launch's status was never written: the next reconcile sends the same
    generation (its ClientToken and tag), which adopts the set instead of a second one."""
    decision, p = broken_gang()
    p = stored(p, decision)
    views = gpu_failed(nodes(4), 0)
    first = launch_asked(decide(p, world(views, release=ReleaseResult(terminated=(IDS[0],))), T0))
    again = launch_asked(decide(p, world(views, release=ReleaseResult(terminated=(IDS[0],))), T0))
    assert first is not None
    assert again is not None
    assert again.generation == first.generation


def test_a_claim_dropped_mid_repair_releases_everything_a_lost_launch_included() -> None:
    decision, p = broken_gang()
    p = stored(p, decision)
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})})
    lost = replacement()
    out = decide(p, world(nodes(4), found=(lost,)), T0 + timedelta(seconds=62))
    assert out.status.phase == "Releasing"
    assert isinstance(out.waiting_on, Terminate)  # stored first, then terminated
    assert set(out.waiting_on.request.instance_ids) == {*IDS, NEW}


def test_a_failed_termination_keeps_the_broken_instance_recorded_and_launches_nothing() -> None:
    decision, p = broken_gang()
    p = stored(p, decision)
    views = gpu_failed(nodes(4), 0)
    throttled = ReleaseResult(reason=FailureReason.THROTTLED, message="RequestLimitExceeded")
    out = decide(p, world(views, release=throttled), T0 + timedelta(seconds=62))
    assert out.status.instanceIds == IDS  # not known terminated: still recorded
    assert out.status.phase == "Repairing"
    assert launch_asked(out) is None
    assert out.requeue_after == HEALTH.release_poll


def test_a_capacity_block_that_drains_mid_repair_drains_the_gang() -> None:
    decision, p = broken_gang()
    end = T0 + timedelta(minutes=45)  # drain point (40 min lead) 5 minutes after T0
    p = stored(p, decision)
    p = p.model_copy(
        update={
            "status": p.status.model_copy(
                update={"capacityBlock": True, "reservationId": "cr-1", "reservationEnd": end}
            )
        }
    )
    out = decide(p, world(gpu_failed(nodes(4), 0), found=()), T0 + timedelta(minutes=6))
    assert out.status.phase == "Degraded"
    assert out.status.lastErrorReason == "CapacityBlockEnding"
    assert out.status.repair is None
    assert launch_asked(out) is None

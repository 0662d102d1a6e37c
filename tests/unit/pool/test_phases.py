"""Each phase through machine.decide with a fixed clock: no I/O, no sleeping."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.api import GangNodePool, PendingLaunch, conditions
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.types import (
    Instance,
    Launched,
    PermanentFailure,
    ReleaseResult,
    RetryLater,
    Shortfall,
    TopologyRead,
    UnknownLaunch,
    Waiting,
    ZoneAttempt,
)
from atomic_gang_provisioner.pool import machine, report
from atomic_gang_provisioner.pool.model import Describe, FindByTag, ReadTopology
from atomic_gang_provisioner.pool.outcomes import (
    JoinDuration,
    KeepWarmReuse,
    Spread,
    TimeToSatisfied,
)
from tests.support.pools import (
    CLAIM,
    IDS,
    KEY,
    KNOBS,
    T0,
    instances,
    launched,
    nodes,
    observed,
    pool,
)
from tests.unit.pool.writeahead import released_after_write_ahead

ICE = Shortfall(
    attempts=(
        ZoneAttempt(zone="us-east-1a", code="InsufficientInstanceCapacity", message="no p4d"),
    )
)


def test_idle_without_claim_does_nothing() -> None:
    plan = machine.decide(pool(claim=None), observed(), T0)
    assert plan.status.phase == "Idle"
    assert plan.acquire is None
    assert plan.requeue_after is None


def test_claim_writes_acquiring_ahead_then_launches() -> None:
    p = pool()
    plan = machine.decide(p, observed(), T0)
    assert plan.status.phase == "Acquiring"
    assert plan.acquire is None  # write-ahead: status first
    assert plan.requeue_after == machine.WRITE_AHEAD_REQUEUE
    assert plan.status.acquiringSince == T0
    launch = machine.decide(p.model_copy(update={"status": plan.status}), observed(), T0)
    assert launch.acquire is not None
    assert launch.acquire.generation == plan.status.acquireGeneration == millis(T0)
    assert launch.acquire.spec.count == 4


def test_launch_result_moves_to_joining_and_bumps_generation() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=3)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    insts = instances("pending")
    result = Launched(instances=insts, client_token="t")
    after = machine.after_acquire(p, plan, request=plan.acquire, result=result, now=T0, knobs=KNOBS)
    s = after.status
    assert (s.phase, s.activeGeneration, s.acquireGeneration) == ("Joining", 3, 4)
    assert s.instanceIds == IDS
    assert s.activeGroup == "pretrain-g3"
    assert s.joinDeadline == T0 + timedelta(seconds=600)
    assert [e.reason for e in after.events] == ["Launched"]


def test_shortfall_backs_off_bumps_generation_and_bills_nothing() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=3)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    after = machine.after_acquire(p, plan, request=plan.acquire, result=ICE, now=T0, knobs=KNOBS)
    s = after.status
    assert s.phase == "Acquiring"
    assert s.acquireGeneration == 4
    assert s.consecutiveShortfalls == 1
    assert s.lastErrorReason == "InsufficientCapacity"
    assert s.nextAttemptAt is not None
    assert 2.5 <= after.requeue_after <= 5  # type: ignore[operator]
    assert "attempt 1/3" in after.events[0].message
    assert "nothing billed" in after.events[0].message
    # Before the backoff elapses, no launch is planned.
    waiting = machine.decide(p.model_copy(update={"status": s}), observed(), T0)
    assert waiting.acquire is None
    assert waiting.requeue_after == pytest.approx(after.requeue_after)


def test_after_k_shortfalls_stop_attempting() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, consecutiveShortfalls=2)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    after = machine.after_acquire(p, plan, request=plan.acquire, result=ICE, now=T0, knobs=KNOBS)
    assert after.status.consecutiveShortfalls == 3
    assert after.requeue_after is None
    later = machine.decide(
        p.model_copy(update={"status": after.status}), observed(), T0 + timedelta(hours=1)
    )
    assert later.acquire is None


def test_permanent_failure_gives_up_at_once() -> None:
    p = pool(phase="Acquiring", claimKey=KEY)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    bad = PermanentFailure(code="InvalidAMIID.NotFound", message="no such AMI", hint="check ami")
    after = machine.after_acquire(p, plan, request=plan.acquire, result=bad, now=T0, knobs=KNOBS)
    assert after.status.lastErrorReason == "PermanentError"
    assert "InvalidAMIID.NotFound" in after.status.lastError
    assert after.requeue_after is None


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        pytest.param(
            PermanentFailure(
                code="NodeRoleNotAuthorized",
                message="node role r may not join cluster c",
                reason=FailureReason.NODE_ROLE_NOT_AUTHORIZED,
            ),
            "NodeRoleNotAuthorized",
            id="node-role-not-authorized",
        ),
        pytest.param(
            PermanentFailure(
                code="SubnetNotInCluster",
                message="subnet s is in vpc-x",
                reason=FailureReason.INVALID_SUBNET,
            ),
            "InvalidSubnet",
            id="subnet-outside-the-vpc",
        ),
    ],
)
def test_a_named_permanent_failure_gives_up_under_its_own_reason(
    failure: PermanentFailure, reason: str
) -> None:
    p = pool(phase="Acquiring", claimKey=KEY)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    after = machine.after_acquire(
        p, plan, request=plan.acquire, result=failure, now=T0, knobs=KNOBS
    )
    assert after.status.lastErrorReason == reason
    assert [(e.type, e.reason) for e in after.events] == [("Warning", reason)]
    assert after.requeue_after is None  # no retry at backoff: the claimant gets Retry/Rejected
    ready = next(c for c in after.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", reason)
    stays = machine.decide(p.model_copy(update={"status": after.status}), observed(), T0)
    assert stays.acquire is None


def test_retry_later_keeps_the_generation() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=5)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    slow = RetryLater(code="RequestLimitExceeded", message="slow down")
    after = machine.after_acquire(p, plan, request=plan.acquire, result=slow, now=T0, knobs=KNOBS)
    assert after.status.acquireGeneration == 5
    assert after.status.consecutiveShortfalls == 0
    assert after.requeue_after


def test_a_launch_of_unknown_outcome_is_recorded_then_replayed_first_until_ec2_answers() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=5)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    assert plan.acquire.replay is None
    unknown = UnknownLaunch(zone="us-east-1b", token="ag-pretrain-g5-us-east-1b")
    lost = RetryLater(code="ReadTimeout", message="no answer", unknown=unknown)
    after = machine.after_acquire(p, plan, request=plan.acquire, result=lost, now=T0, knobs=KNOBS)
    assert after.status.pendingLaunch == PendingLaunch(
        generation=5, zone="us-east-1b", clientToken="ag-pretrain-g5-us-east-1b"
    )
    assert after.acquire is None  # recorded first: the replay is the next attempt's
    again = p.model_copy(update={"status": after.status})
    later = T0 + timedelta(seconds=after.requeue_after or 0)
    retry = machine.decide(again, observed(), later)
    assert retry.acquire is not None
    assert retry.acquire.replay == unknown
    # A throttle of the replay itself leaves the record standing.
    slow = RetryLater(code="RequestLimitExceeded", message="slow down", launched_nothing=True)
    kept = machine.after_acquire(
        again, retry, request=retry.acquire, result=slow, now=later, knobs=KNOBS
    )
    assert kept.status.pendingLaunch == after.status.pendingLaunch
    # EC2's answer (here: the set) settles it.
    done = Launched(instances=instances("pending"), client_token=unknown.token)
    settled = machine.after_acquire(
        again, retry, request=retry.acquire, result=done, now=later, knobs=KNOBS
    )
    assert settled.status.pendingLaunch is None
    refused = machine.after_acquire(
        again, retry, request=retry.acquire, result=ICE, now=later, knobs=KNOBS
    )
    assert refused.status.pendingLaunch is None


def test_a_record_of_another_generation_is_never_replayed() -> None:
    old = PendingLaunch(generation=4, zone="us-east-1b", clientToken="ag-pretrain-g4-us-east-1b")
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=5, pendingLaunch=old)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    assert plan.acquire.replay is None


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        pytest.param(
            FailureReason.WAITING_FOR_LAUNCH_BUDGET,
            "waiting for EC2's launch budget: 12 pools ahead",
            id="budget",
        ),
        pytest.param(
            FailureReason.WAITING_FOR_CAPACITY,
            "waiting for p4d.24xlarge in us-east-1a: 3 gangs ahead",
            id="cell",
        ),
    ],
)
def test_waiting_its_turn_is_no_attempt_and_the_claimant_reads_why(
    reason: FailureReason, message: str
) -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=5, consecutiveShortfalls=2)
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    assert plan.acquire.waiting_since == p.status.acquiringSince  # its place in the line
    wait = Waiting(reason=reason, message=message, retry_after=6.0)
    after = machine.after_acquire(p, plan, request=plan.acquire, result=wait, now=T0, knobs=KNOBS)
    assert after.status.acquireGeneration == 5  # the same ClientToken next time
    assert after.status.consecutiveShortfalls == 2  # not an attempt
    assert after.requeue_after == 6.0
    assert after.events == ()
    ready = next(c for c in after.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", reason)
    assert message in ready.message
    got = conditions.for_claim(p.model_copy(update={"status": after.status}), KEY)
    assert message in got.progress  # what the check message shows
    assert "(attempt 2/3 failed)" in got.progress  # the shortfalls stay in view


def test_claim_dropped_while_acquiring_looks_for_a_lost_launch_then_goes_idle() -> None:
    p = pool(claim=None, phase="Acquiring", consecutiveShortfalls=2, acquireGeneration=7)
    first = machine.decide(p, observed(), T0)
    assert first.read == FindByTag(7)
    assert first.status.phase == "Acquiring"
    plan = machine.decide(p, replace(observed(), found=()), T0)
    assert plan.status.phase == "Idle"
    assert plan.status.consecutiveShortfalls == 0
    assert plan.acquire is None


def test_a_quick_join_writes_no_ready_count_per_node_and_a_slow_one_shows_it() -> None:
    """Within 20 s of the launch a Node turning Ready changes nothing to write (nor the
    Workload's message); the reconcile comes back at 20 s to show n/N if still joining."""
    p = launched()
    quick = machine.decide(p, observed(nodes(3)), T0 + timedelta(seconds=5))
    assert quick.status.readyCount == 0
    assert quick.requeue_after == pytest.approx(15)
    slow = machine.decide(p, observed(nodes(3)), T0 + timedelta(seconds=20))
    assert slow.status.readyCount == 3
    done = machine.decide(p, observed(nodes(4)), T0 + timedelta(seconds=5))
    assert isinstance(done.read, Describe)  # all N Ready: on to the join check at once


def test_a_slow_join_shows_its_n_of_n_at_most_every_progress_interval() -> None:
    """At scale a gang's Nodes lose their not-ready taint one by one over many seconds:
    each n/N is a pool write and a check write, so the next waits PROGRESS_SECONDS."""
    p = launched()
    shown = T0 + timedelta(seconds=25)  # this process wrote 2/4 then
    at = replace(observed(nodes(3)), progress_written_at=shown)
    held = machine.decide(p, at, shown + timedelta(seconds=4))
    assert held.status.readyCount == 0  # what the pool had: nothing new to write
    assert held.requeue_after == pytest.approx(6)  # back when the next n/N is due
    due = machine.decide(p, at, shown + timedelta(seconds=10))
    assert due.status.readyCount == 3
    done = machine.decide(p, replace(observed(nodes(4)), progress_written_at=shown), shown)
    assert isinstance(done.read, Describe)  # all N Ready is never held back


def test_joining_waits_for_exactly_n_ready_nodes() -> None:
    p = launched()
    plan = machine.decide(p, observed(nodes(3)), T0 + timedelta(seconds=30))
    assert plan.status.phase == "Joining"
    assert plan.status.readyCount == 3
    assert plan.requeue_after == pytest.approx(570)
    notready = machine.decide(p, observed(nodes(4, ready=False)), T0)
    assert notready.status.phase == "Joining"
    wrong = machine.decide(p, observed(nodes(4, group="pretrain-g0")), T0)
    assert wrong.status.phase == "Joining"


def test_a_ready_node_counts_only_once_it_holds_what_one_pod_asks_for() -> None:
    """The device plugin advertises the GPUs a while after the Node turned Ready: until
    then a gang pod would fail to schedule, so the Node is not Ready for the gang."""
    wants = CLAIM.model_copy(update={"resources": {"nvidia.com/gpu": 8}})
    p = launched().model_copy(update={"spec": launched().spec.model_copy(update={"claim": wants})})
    later = T0 + timedelta(seconds=30)
    bare = machine.decide(p, observed(nodes(4)), later)
    assert (bare.status.readyCount, isinstance(bare.read, Describe)) == (0, False)
    assert bare.status.readyWithoutDevices == 4
    said = report.progress(p, bare.status, KNOBS)
    assert "0/4 nodes Ready; 4 more Ready without nvidia.com/gpu: 8 in allocatable" in said
    short = machine.decide(p, observed(nodes(4, devices=(("nvidia.com/gpu", 7),))), later)
    assert short.status.readyCount == 0  # one GPU fell off: the pod would not fit
    full = (*nodes(3, devices=(("nvidia.com/gpu", 8),)), *nodes(4)[3:])
    partly = machine.decide(p, observed(full), later).status
    assert (partly.readyCount, partly.readyWithoutDevices) == (3, 1)
    done = machine.decide(p, observed(nodes(4, devices=(("nvidia.com/gpu", 8),))), later)
    assert isinstance(done.read, Describe)  # all N hold it: on to the join check
    plain = machine.decide(launched(), observed(nodes(4)), later)
    assert isinstance(plain.read, Describe)  # a claimant asking no device waits for none
    timeout = machine.decide(p, observed(nodes(4)), T0 + timedelta(seconds=600))
    assert timeout.status.phase == "Releasing"
    assert timeout.status.lastError.startswith(
        "Only 0/4 nodes became Ready before the join deadline; 4 more Ready without "
        "nvidia.com/gpu: 8 in allocatable (their device plugin has not registered)"
    )


def test_n_ready_nodes_need_one_describe_then_satisfied() -> None:
    p = launched()
    first = machine.decide(p, observed(nodes(4)), T0 + timedelta(seconds=40))
    assert isinstance(first.read, Describe)
    assert first.status.phase == "Joining"
    second = machine.decide(p, observed(nodes(4), instances()), T0 + timedelta(seconds=40))
    assert second.read == ReadTopology(tuple(IDS))  # p4d: EC2 reports its network topology
    third = machine.decide(
        p,
        replace(observed(nodes(4), instances()), topology=TopologyRead()),
        T0 + timedelta(seconds=40),
    )
    s = third.status
    assert s.phase == "Satisfied"
    assert (s.readyCount, s.claimKey) == (4, KEY)
    assert set(third.metrics) == {Spread(p.name, 0), TimeToSatisfied(45.0), JoinDuration(40.0)}
    ready = next(c for c in s.conditions if c.type == "Ready")
    assert ready.status == "True"


def test_dead_instance_while_joining_releases_whole_set() -> None:
    plan = machine.decide(launched(), observed(nodes(4), instances(dead=1)), T0)
    assert plan.status.phase == "Releasing"
    assert plan.status.lastErrorReason == "InstanceLost"
    _, release = released_after_write_ahead(launched(), plan)
    assert release.release is not None
    assert release.release.instance_ids == tuple(IDS)


def test_join_watchdog_releases_and_reacquires() -> None:
    p = launched()
    plan = machine.decide(p, observed(nodes(3)), T0 + timedelta(seconds=601))
    assert plan.status.phase == "Releasing"
    assert plan.status.lastErrorReason == "JoinTimeout"
    assert plan.status.consecutiveShortfalls == 1
    assert "3/4" in plan.events[0].message
    p, release = released_after_write_ahead(p, plan)
    done = machine.after_release(
        p, release, result=ReleaseResult(terminated=tuple(IDS)), now=T0, knobs=KNOBS
    )
    assert done.status.phase == "Acquiring"
    assert done.status.instanceIds == []


def test_release_waits_for_enis() -> None:
    p = launched(phase="Releasing")
    plan = machine.decide(p, observed(), T0)
    assert plan.release is not None
    pending = ReleaseResult(terminated=tuple(IDS), pending_enis=("eni-1",))
    after = machine.after_release(p, plan, result=pending, now=T0, knobs=KNOBS)
    assert after.status.phase == "Releasing"
    assert after.status.pendingEnis == ["eni-1"]
    assert after.requeue_after == KNOBS.release_poll


def test_satisfied_without_claim_keeps_warm_and_tags() -> None:
    p = launched(phase="Satisfied", claimKey=KEY)
    plan = machine.decide(
        p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})}),
        observed(nodes(4)),
        T0,
    )
    assert plan.status.phase == "KeepWarm"
    assert plan.status.keepWarmUntil == T0 + timedelta(minutes=15)
    assert plan.tag is not None
    assert plan.tag.tags == ((keys.KEEP_WARM_UNTIL, "2026-11-29T12:15:00Z"),)
    assert plan.requeue_after == 900


def test_keep_warm_zero_releases_at_once() -> None:
    p = launched(phase="Satisfied", claimKey=KEY)
    p = p.model_copy(
        update={"spec": p.spec.model_copy(update={"claim": None, "keepWarmTTL": "0s"})}
    )
    plan = machine.decide(p, observed(nodes(4)), T0)
    assert plan.status.phase == "Releasing"
    released_after_write_ahead(p, plan, observed(nodes(4)))


def test_warm_reuse_has_no_launch() -> None:
    p = launched(phase="KeepWarm", claimKey="", keepWarmUntil=T0 + timedelta(minutes=5))
    plan = machine.decide(p, observed(nodes(4)), T0)
    assert plan.status.phase == "Satisfied"
    assert plan.acquire is None
    assert plan.status.claimKey == KEY
    assert plan.tag is not None
    assert plan.tag.tags == ((keys.KEEP_WARM_UNTIL, ""),)
    assert plan.metrics == (KeepWarmReuse(),)


def test_keep_warm_expiry_releases() -> None:
    p = launched(phase="KeepWarm", keepWarmUntil=T0)
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})})
    plan = machine.decide(p, observed(nodes(4)), T0 + timedelta(seconds=1))
    assert plan.status.phase == "Releasing"
    assert [e.reason for e in plan.events] == ["KeepWarmExpired"]
    p, release = released_after_write_ahead(p, plan, observed(nodes(4)))
    done = machine.after_release(p, release, result=ReleaseResult(), now=T0, knobs=KNOBS)
    assert done.status.phase == "Idle"
    assert [e.reason for e in done.events] == ["Released"]


def test_lost_instance_degrades_claimant_and_releases() -> None:
    p = launched(phase="Satisfied")
    first = machine.decide(p, observed(nodes(3)), T0)
    assert isinstance(first.read, Describe)
    plan = machine.decide(p, observed(nodes(3), instances(dead=1)), T0)
    s = plan.status
    assert s.phase == "Degraded"
    assert s.degradedClaimKey == KEY
    p, release = released_after_write_ahead(p, plan)
    done = machine.after_release(p, release, result=ReleaseResult(), now=T0, knobs=KNOBS)
    assert done.status.phase == "Degraded"  # until Kueue evicts the claimant
    assert done.status.instanceIds == []
    held = done.status
    again = machine.decide(p.model_copy(update={"status": held}), observed(), T0)
    assert again.acquire is None
    dropped = p.model_copy(
        update={"status": held, "spec": p.spec.model_copy(update={"claim": None})}
    )
    assert machine.decide(dropped, observed(), T0).status.phase == "Idle"


def test_not_ready_node_gets_a_grace_period() -> None:
    p = launched(phase="Satisfied")
    views = (*nodes(3), nodes(4, ready=False)[3])
    assert isinstance(
        machine.decide(p, observed(views), T0).read, Describe
    )  # one look at EC2 first
    plan = machine.decide(p, observed(views, instances()), T0)
    assert plan.status.phase == "Satisfied"
    assert plan.status.unhealthySince == T0
    assert plan.requeue_after == 60
    held = p.model_copy(update={"status": plan.status})
    assert not isinstance(
        machine.decide(held, observed(views), T0 + timedelta(seconds=30)).read, Describe
    )
    later = machine.decide(held, observed(views), T0 + timedelta(seconds=61))
    assert later.status.phase == "Degraded"
    assert later.status.lastErrorReason == "NodeNotReady"


def test_finalizer_releases_then_removes() -> None:
    p = launched(phase="Satisfied")
    p = p.model_copy(update={"metadata": {**p.metadata, "deletionTimestamp": "x"}})
    plan = machine.decide(p, observed(nodes(4)), T0)
    assert plan.status.phase == "Releasing"
    assert plan.remove_finalizer is False
    p, release = released_after_write_ahead(p, plan, observed(nodes(4)))
    assert release.remove_finalizer is False
    done = machine.after_release(p, release, result=ReleaseResult(), now=T0, knobs=KNOBS)
    assert done.remove_finalizer is True
    empty = pool(deleting=True)
    assert machine.decide(empty, observed(), T0).remove_finalizer is True


def test_idle_with_leftovers_releases() -> None:
    p = pool(phase="Idle", instanceIds=["i-1"])
    plan = machine.decide(p, observed(), T0)
    _, release = released_after_write_ahead(p, plan)
    assert release.release is not None
    assert release.release.instance_ids == ("i-1",)


def test_observed_generation_is_recorded() -> None:
    plan = machine.decide(pool(generation=9), observed(), T0)
    assert plan.status.observedGeneration == 9


def test_instance_type_alias() -> None:
    assert (
        Instance(
            instance_id="i-1",
            state="running",
            availability_zone="us-east-1a",
            instance_type="p4d",
            launch_time=T0,
        ).provider_id
        == "aws:///us-east-1a/i-1"
    )


def test_reclaim_by_the_same_workload_resets_attempts() -> None:
    """After Retry, the same Workload claims again with a new claimedAt: attempts restart."""
    gave_up = pool(
        phase="Acquiring",
        claimKey=KEY,
        consecutiveShortfalls=3,
        lastErrorReason="InsufficientCapacity",
    )
    assert machine.decide(gave_up, observed(), T0).acquire is None
    again = CLAIM.model_copy(update={"claimedAt": T0 + timedelta(minutes=5)})
    reclaimed = gave_up.model_copy(
        update={"spec": gave_up.spec.model_copy(update={"claim": again})}
    )
    plan = machine.decide(reclaimed, observed(), T0 + timedelta(minutes=5))
    assert plan.acquire is not None
    assert plan.status.consecutiveShortfalls == 0
    assert plan.status.claimKey == again.key


def created_at(stamp: str) -> GangNodePool:
    p = pool()
    return p.model_copy(update={"metadata": {**p.metadata, "creationTimestamp": stamp}})


def millis(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def test_generation_is_seeded_from_the_first_decision_in_milliseconds() -> None:
    p = created_at("2026-11-29T11:59:00Z")
    plan = machine.decide(p, observed(), T0)
    assert plan.status.acquireGeneration == millis(T0)
    written = p.model_copy(update={"status": plan.status})
    again = machine.decide(written, observed(), T0 + timedelta(seconds=3))
    assert again.acquire is not None
    assert again.acquire.generation == millis(T0)  # a written seed is kept


def test_a_pool_created_again_inside_the_same_second_never_reuses_a_generation() -> None:
    """The e2e race: launched, deleted and created again within one creation second."""
    stamp = T0.strftime("%Y-%m-%dT%H:%M:%SZ")
    first = machine.decide(created_at(stamp), observed(), T0 + timedelta(milliseconds=10))
    successor = created_at(stamp).model_copy(
        update={"metadata": {**created_at(stamp).metadata, "uid": "second-object"}}
    )
    second = machine.decide(successor, observed(), T0 + timedelta(milliseconds=700))
    used = first.status.acquireGeneration
    assert second.status.acquireGeneration > used
    # Each of the predecessor's later attempts took a round trip: its generations stay
    # below its successor's seed even after a retry every millisecond.
    assert second.status.acquireGeneration > used + 600


def test_the_creation_time_is_a_floor_for_a_clock_behind_the_apiserver() -> None:
    ahead = T0 + timedelta(seconds=30)
    plan = machine.decide(created_at(ahead.strftime("%Y-%m-%dT%H:%M:%SZ")), observed(), T0)
    assert plan.status.acquireGeneration == millis(ahead)


def test_lost_launch_found_after_abandon_is_released() -> None:
    p = pool(claim=None, phase="Acquiring", acquireGeneration=7)
    plan = machine.decide(p, replace(observed(), found=instances()), T0)
    assert plan.status.phase == "Releasing"
    assert plan.status.instanceIds == IDS  # persisted before the terminate call
    assert plan.status.acquireGeneration == 8
    _, release = released_after_write_ahead(p, plan)
    assert release.release is not None
    assert release.release.instance_ids == tuple(IDS)


def test_finalizer_while_acquiring_finds_lost_launches() -> None:
    p = pool(deleting=True, phase="Acquiring", acquireGeneration=3)
    assert machine.decide(p, observed(), T0).read == FindByTag(3)
    plan = machine.decide(p, replace(observed(), found=instances()), T0)
    assert plan.status.instanceIds == IDS
    assert not plan.remove_finalizer
    _, release = released_after_write_ahead(p, plan)
    assert release.release is not None
    assert not release.remove_finalizer
    nothing = machine.decide(p, replace(observed(), found=()), T0)
    assert nothing.remove_finalizer


def test_a_join_timeout_with_no_node_at_all_says_access_is_re_checked_first() -> None:
    p = launched()
    timeout = machine.decide(p, observed(()), T0 + timedelta(seconds=600))
    assert timeout.status.phase == "Releasing"
    assert timeout.status.lastError == (
        "Only 0/4 nodes became Ready before the join deadline; releasing the whole set and "
        "retrying (none joined: the next attempt first re-checks that the node role may join "
        "the cluster, its access entry or aws-auth mapping, and says so if it may not)"
    )
    some = machine.decide(p, observed(nodes(4)[:1]), T0 + timedelta(seconds=600))
    assert "none joined" not in (some.status.lastError or "")

"""Each phase's story told against a fixed world and clock: no I/O, no sleeping."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.api import GangNodePool, PendingLaunch, conditions
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.values import (
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
from atomic_gang_provisioner.pool import report
from atomic_gang_provisioner.pool.driver import WRITE_AHEAD_REQUEUE, Decision
from atomic_gang_provisioner.pool.outcomes import (
    JoinDuration,
    KeepWarmReuse,
    Spread,
    TimeToSatisfied,
)
from atomic_gang_provisioner.pool.story import Describe, FindByTag, Launch, ReadTopology
from tests.support.pools import (
    CLAIM,
    IDS,
    KEY,
    KNOBS,
    T0,
    decide,
    instances,
    launch_asked,
    launched,
    nodes,
    observed,
    pool,
    release_asked,
)
from tests.unit.pool.writeahead import released_after_write_ahead

ICE = Shortfall(
    attempts=(
        ZoneAttempt(zone="us-east-1a", code="InsufficientInstanceCapacity", message="no p4d"),
    )
)


def asks_ec2(decision: Decision) -> bool:
    """The decision waits on a describe of the set."""
    return decision.parked and isinstance(decision.waiting_on, Describe)


def test_idle_without_claim_does_nothing() -> None:
    decision = decide(pool(claim=None), observed(), T0)
    assert decision.status.phase == "Idle"
    assert launch_asked(decision) is None
    assert decision.requeue_after is None


def test_claim_writes_acquiring_ahead_then_launches() -> None:
    p = pool()
    decision = decide(p, observed(), T0)
    assert decision.status.phase == "Acquiring"
    assert launch_asked(decision) is None  # write-ahead: status first
    assert decision.requeue_after == WRITE_AHEAD_REQUEUE
    assert decision.status.acquiringSince == T0
    launch = launch_asked(decide(p.model_copy(update={"status": decision.status}), observed(), T0))
    assert launch is not None
    assert launch.generation == decision.status.acquireGeneration == millis(T0)
    assert launch.spec.count == 4


def test_launch_result_moves_to_joining_and_bumps_generation() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=3)
    decision = decide(p, observed(), T0)
    assert launch_asked(decision) is not None
    insts = instances("pending")
    result = Launched(instances=insts, client_token="t")
    after = decide(p, replace(observed(), launch=result), T0)
    s = after.status
    assert (s.phase, s.activeGeneration, s.acquireGeneration) == ("Joining", 3, 4)
    assert s.instanceIds == IDS
    assert s.activeGroup == "pretrain-g3"
    assert s.joinDeadline == T0 + timedelta(seconds=600)
    assert [e.reason for e in after.events] == ["Launched"]


def test_shortfall_backs_off_bumps_generation_and_bills_nothing() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=3)
    decision = decide(p, observed(), T0)
    assert launch_asked(decision) is not None
    after = decide(p, replace(observed(), launch=ICE), T0)
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
    waiting = decide(p.model_copy(update={"status": s}), observed(), T0)
    assert launch_asked(waiting) is None
    assert waiting.requeue_after == pytest.approx(after.requeue_after)


def test_after_k_shortfalls_stop_attempting() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, consecutiveShortfalls=2)
    decision = decide(p, observed(), T0)
    assert launch_asked(decision) is not None
    after = decide(p, replace(observed(), launch=ICE), T0)
    assert after.status.consecutiveShortfalls == 3
    assert after.requeue_after is None
    later = decide(
        p.model_copy(update={"status": after.status}), observed(), T0 + timedelta(hours=1)
    )
    assert launch_asked(later) is None


def test_permanent_failure_gives_up_at_once() -> None:
    p = pool(phase="Acquiring", claimKey=KEY)
    decision = decide(p, observed(), T0)
    assert launch_asked(decision) is not None
    bad = PermanentFailure(code="InvalidAMIID.NotFound", message="no such AMI", hint="check ami")
    after = decide(p, replace(observed(), launch=bad), T0)
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
    decision = decide(p, observed(), T0)
    assert launch_asked(decision) is not None
    after = decide(p, replace(observed(), launch=failure), T0)
    assert after.status.lastErrorReason == reason
    assert [(e.type, e.reason) for e in after.events] == [("Warning", reason)]
    assert after.requeue_after is None  # no retry at backoff: the claimant gets Retry/Rejected
    ready = next(c for c in after.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", reason)
    stays = decide(p.model_copy(update={"status": after.status}), observed(), T0)
    assert launch_asked(stays) is None


def test_retry_later_keeps_the_generation() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=5)
    decision = decide(p, observed(), T0)
    assert launch_asked(decision) is not None
    slow = RetryLater(code="RequestLimitExceeded", message="slow down")
    after = decide(p, replace(observed(), launch=slow), T0)
    assert after.status.acquireGeneration == 5
    assert after.status.consecutiveShortfalls == 0
    assert after.requeue_after


def test_a_launch_of_unknown_outcome_is_recorded_then_replayed_first_until_ec2_answers() -> None:
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=5)
    launch = launch_asked(decide(p, observed(), T0))
    assert launch is not None
    assert launch.replay is None
    unknown = UnknownLaunch(zone="us-east-1b", token="ag-pretrain-g5-us-east-1b")
    lost = RetryLater(code="ReadTimeout", message="no answer", unknown=unknown)
    after = decide(p, replace(observed(), launch=lost), T0)
    assert after.status.pendingLaunch == PendingLaunch(
        generation=5, zone="us-east-1b", clientToken="ag-pretrain-g5-us-east-1b", recordedAt=T0
    )
    assert launch_asked(after) is None  # recorded first: the replay is the next attempt's
    again = p.model_copy(update={"status": after.status})
    later = T0 + timedelta(seconds=after.requeue_after or 0)
    retry = launch_asked(decide(again, observed(), later))
    assert retry is not None
    assert retry.replay == unknown
    # A throttle of the replay itself leaves the record standing.
    slow = RetryLater(code="RequestLimitExceeded", message="slow down", launched_nothing=True)
    kept = decide(again, replace(observed(), launch=slow), later)
    assert kept.status.pendingLaunch == after.status.pendingLaunch
    # EC2's answer (here: the set) settles it.
    done = Launched(instances=instances("pending"), client_token=unknown.token)
    settled = decide(again, replace(observed(), launch=done), later)
    assert settled.status.pendingLaunch is None
    refused = decide(again, replace(observed(), launch=ICE), later)
    assert refused.status.pendingLaunch is None


def test_a_record_of_another_generation_is_never_replayed() -> None:
    old = PendingLaunch(generation=4, zone="us-east-1b", clientToken="ag-pretrain-g4-us-east-1b")
    p = pool(phase="Acquiring", claimKey=KEY, acquireGeneration=5, pendingLaunch=old)
    launch = launch_asked(decide(p, observed(), T0))
    assert launch is not None
    assert launch.replay is None


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
    launch = launch_asked(decide(p, observed(), T0))
    assert launch is not None
    assert launch.waiting_since == p.status.acquiringSince  # its place in the line
    wait = Waiting(reason=reason, message=message, retry_after=6.0)
    after = decide(p, replace(observed(), launch=wait), T0)
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
    first = decide(p, observed(), T0)
    assert first.parked
    assert first.waiting_on == FindByTag(7)
    assert first.status.phase == "Acquiring"
    decision = decide(p, replace(observed(), found=()), T0)
    assert decision.status.phase == "Idle"
    assert decision.status.consecutiveShortfalls == 0
    assert launch_asked(decision) is None


def test_a_quick_join_writes_no_ready_count_per_node_and_a_slow_one_shows_it() -> None:
    """Within 20 s of the launch a Node turning Ready changes nothing to write (nor the
    Workload's message); the reconcile comes back at 20 s to show n/N if still joining."""
    p = launched()
    quick = decide(p, observed(nodes(3)), T0 + timedelta(seconds=5))
    assert quick.status.readyCount == 0
    assert quick.requeue_after == pytest.approx(15)
    slow = decide(p, observed(nodes(3)), T0 + timedelta(seconds=20))
    assert slow.status.readyCount == 3
    done = decide(p, observed(nodes(4)), T0 + timedelta(seconds=5))
    assert asks_ec2(done)  # all N Ready: on to the join check at once


def test_a_slow_join_shows_its_n_of_n_at_most_every_progress_interval() -> None:
    """At scale a gang's Nodes lose their not-ready taint one by one over many seconds:
    each n/N is a pool write and a check write, so the next waits PROGRESS_SECONDS."""
    p = launched()
    shown = T0 + timedelta(seconds=25)  # this process wrote 2/4 then
    at = replace(observed(nodes(3)), progress_written_at=shown)
    held = decide(p, at, shown + timedelta(seconds=4))
    assert held.status.readyCount == 0  # what the pool had: nothing new to write
    assert held.requeue_after == pytest.approx(6)  # back when the next n/N is due
    due = decide(p, at, shown + timedelta(seconds=10))
    assert due.status.readyCount == 3
    done = decide(p, replace(observed(nodes(4)), progress_written_at=shown), shown)
    assert asks_ec2(done)  # all N Ready is never held back


def test_joining_waits_for_exactly_n_ready_nodes() -> None:
    p = launched()
    decision = decide(p, observed(nodes(3)), T0 + timedelta(seconds=30))
    assert decision.status.phase == "Joining"
    assert decision.status.readyCount == 3
    assert decision.requeue_after == pytest.approx(570)
    notready = decide(p, observed(nodes(4, ready=False)), T0)
    assert notready.status.phase == "Joining"
    wrong = decide(p, observed(nodes(4, group="pretrain-g0")), T0)
    assert wrong.status.phase == "Joining"


def test_a_ready_node_counts_only_once_it_holds_what_one_pod_asks_for() -> None:
    """The device plugin advertises the GPUs a while after the Node turned Ready: until
    then a gang pod would fail to schedule, so the Node is not Ready for the gang."""
    wants = CLAIM.model_copy(update={"resources": {"nvidia.com/gpu": 8}})
    p = launched().model_copy(update={"spec": launched().spec.model_copy(update={"claim": wants})})
    later = T0 + timedelta(seconds=30)
    bare = decide(p, observed(nodes(4)), later)
    assert (bare.status.readyCount, bare.waiting_on) == (0, None)
    assert bare.status.readyWithoutDevices == 4
    said = report.progress(p, bare.status, KNOBS)
    assert "0/4 nodes Ready; 4 more Ready without nvidia.com/gpu: 8 in allocatable" in said
    short = decide(p, observed(nodes(4, devices=(("nvidia.com/gpu", 7),))), later)
    assert short.status.readyCount == 0  # one GPU fell off: the pod would not fit
    full = (*nodes(3, devices=(("nvidia.com/gpu", 8),)), *nodes(4)[3:])
    partly = decide(p, observed(full), later).status
    assert (partly.readyCount, partly.readyWithoutDevices) == (3, 1)
    done = decide(p, observed(nodes(4, devices=(("nvidia.com/gpu", 8),))), later)
    assert asks_ec2(done)  # all N hold it: on to the join check
    plain = decide(launched(), observed(nodes(4)), later)
    assert asks_ec2(plain)  # a claimant asking no device waits for none
    timeout = decide(p, observed(nodes(4)), T0 + timedelta(seconds=600))
    assert timeout.status.phase == "Releasing"
    assert timeout.status.lastError.startswith(
        "Only 0/4 nodes became Ready before the join deadline; 4 more Ready without "
        "nvidia.com/gpu: 8 in allocatable (their device plugin has not registered)"
    )


def test_n_ready_nodes_need_one_describe_then_satisfied() -> None:
    p = launched()
    first = decide(p, observed(nodes(4)), T0 + timedelta(seconds=40))
    assert asks_ec2(first)
    assert first.status.phase == "Joining"
    second = decide(p, observed(nodes(4), instances()), T0 + timedelta(seconds=40))
    assert second.parked
    assert second.waiting_on == ReadTopology(tuple(IDS))  # p4d: EC2 reports its topology
    third = decide(
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
    decision = decide(launched(), observed(nodes(4), instances(dead=1)), T0)
    assert decision.status.phase == "Releasing"
    assert decision.status.lastErrorReason == "InstanceLost"
    _, release = released_after_write_ahead(launched(), decision)
    asked = release_asked(release)
    assert asked is not None
    assert asked.instance_ids == tuple(IDS)


def test_join_watchdog_releases_and_reacquires() -> None:
    p = launched()
    decision = decide(p, observed(nodes(3)), T0 + timedelta(seconds=601))
    assert decision.status.phase == "Releasing"
    assert decision.status.lastErrorReason == "JoinTimeout"
    assert decision.status.consecutiveShortfalls == 1
    assert "3/4" in decision.events[0].message
    p, _ = released_after_write_ahead(p, decision)
    done = decide(p, replace(observed(), release=ReleaseResult(terminated=tuple(IDS))), T0)
    assert done.status.phase == "Acquiring"
    assert done.status.instanceIds == []


def test_release_waits_for_enis() -> None:
    p = launched(phase="Releasing")
    decision = decide(p, observed(), T0)
    assert release_asked(decision) is not None
    pending = ReleaseResult(terminated=tuple(IDS), pending_enis=("eni-1",))
    after = decide(p, replace(observed(), release=pending), T0)
    assert after.status.phase == "Releasing"
    assert after.status.pendingEnis == ["eni-1"]
    assert after.requeue_after == KNOBS.release_poll


def test_satisfied_without_claim_keeps_warm_and_tags() -> None:
    p = launched(phase="Satisfied", claimKey=KEY)
    decision = decide(
        p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})}),
        observed(nodes(4)),
        T0,
    )
    assert decision.status.phase == "KeepWarm"
    assert decision.status.keepWarmUntil == T0 + timedelta(minutes=15)
    assert [t.tags for t in decision.tags] == [((keys.KEEP_WARM_UNTIL, "2026-11-29T12:15:00Z"),)]
    assert decision.requeue_after == 900


def test_keep_warm_zero_releases_at_once() -> None:
    p = launched(phase="Satisfied", claimKey=KEY)
    p = p.model_copy(
        update={"spec": p.spec.model_copy(update={"claim": None, "keepWarmTTL": "0s"})}
    )
    decision = decide(p, observed(nodes(4)), T0)
    assert decision.status.phase == "Releasing"
    released_after_write_ahead(p, decision, observed(nodes(4)))


def test_warm_reuse_has_no_launch() -> None:
    p = launched(phase="KeepWarm", claimKey="", keepWarmUntil=T0 + timedelta(minutes=5))
    decision = decide(p, observed(nodes(4)), T0)
    assert decision.status.phase == "Satisfied"
    assert launch_asked(decision) is None
    assert decision.status.claimKey == KEY
    assert [t.tags for t in decision.tags] == [((keys.KEEP_WARM_UNTIL, ""),)]
    assert decision.metrics == (KeepWarmReuse(),)


def test_keep_warm_expiry_releases() -> None:
    p = launched(phase="KeepWarm", keepWarmUntil=T0)
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})})
    decision = decide(p, observed(nodes(4)), T0 + timedelta(seconds=1))
    assert decision.status.phase == "Releasing"
    assert [e.reason for e in decision.events] == ["KeepWarmExpired"]
    p, _ = released_after_write_ahead(p, decision, observed(nodes(4)))
    done = decide(p, replace(observed(), release=ReleaseResult()), T0)
    assert done.status.phase == "Idle"
    assert [e.reason for e in done.events] == ["Released"]


def test_a_warm_set_with_no_owning_namespace_is_released_at_once() -> None:
    """A pool from before ownership: no namespace's label names it any more, so nobody
    could reuse its warm set, and it must not bill until the window ends."""
    p = launched(phase="KeepWarm", keepWarmUntil=T0 + timedelta(minutes=10))
    p = p.model_copy(
        update={"spec": p.spec.model_copy(update={"claim": None, "ownerNamespace": None})}
    )
    decision = decide(p, observed(nodes(4)), T0)
    assert decision.status.phase == "Releasing"
    assert [e.reason for e in decision.events] == ["KeepWarmUnowned"]
    kept = p.model_copy(update={"spec": p.spec.model_copy(update={"ownerNamespace": "team-a"})})
    assert decide(kept, observed(nodes(4)), T0).status.phase == "KeepWarm"


def test_lost_instance_of_a_gang_without_repair_degrades_claimant_and_releases() -> None:
    p = launched(phase="Satisfied", repair="never")
    first = decide(p, observed(nodes(3)), T0)
    assert asks_ec2(first)
    decision = decide(p, observed(nodes(3), instances(dead=1)), T0)
    s = decision.status
    assert s.phase == "Degraded"
    assert s.degradedClaimKey == KEY
    p, _ = released_after_write_ahead(p, decision)
    done = decide(p, replace(observed(), release=ReleaseResult()), T0)
    assert done.status.phase == "Degraded"  # until Kueue evicts the claimant
    assert done.status.instanceIds == []
    held = done.status
    again = decide(p.model_copy(update={"status": held}), observed(), T0)
    assert launch_asked(again) is None
    dropped = p.model_copy(
        update={"status": held, "spec": p.spec.model_copy(update={"claim": None})}
    )
    assert decide(dropped, observed(), T0).status.phase == "Idle"


def test_not_ready_node_gets_a_grace_period() -> None:
    p = launched(phase="Satisfied")
    views = (*nodes(3), nodes(4, ready=False)[3])
    assert asks_ec2(decide(p, observed(views), T0))  # one look at EC2 first
    decision = decide(p, observed(views, instances()), T0)
    assert decision.status.phase == "Satisfied"
    assert decision.status.unhealthySince == T0
    assert decision.requeue_after == 60
    held = p.model_copy(update={"status": decision.status})
    assert decide(held, observed(views), T0 + timedelta(seconds=30)).waiting_on is None
    later = decide(held, observed(views), T0 + timedelta(seconds=61))
    assert later.status.phase == "Repairing"
    assert later.status.repair is not None
    assert [b.reason for b in later.status.repair.broken] == ["NodeNotReady"]


def test_finalizer_releases_then_removes() -> None:
    p = launched(phase="Satisfied")
    p = p.model_copy(update={"metadata": {**p.metadata, "deletionTimestamp": "x"}})
    decision = decide(p, observed(nodes(4)), T0)
    assert decision.status.phase == "Releasing"
    assert decision.remove_finalizer is False
    p, release = released_after_write_ahead(p, decision, observed(nodes(4)))
    assert release.remove_finalizer is False
    done = decide(p, replace(observed(), release=ReleaseResult()), T0)
    assert done.remove_finalizer is True
    empty = pool(deleting=True)
    assert decide(empty, observed(), T0).remove_finalizer is True


def test_idle_with_leftovers_releases() -> None:
    p = pool(phase="Idle", instanceIds=["i-1"])
    decision = decide(p, observed(), T0)
    _, release = released_after_write_ahead(p, decision)
    asked = release_asked(release)
    assert asked is not None
    assert asked.instance_ids == ("i-1",)


def test_observed_generation_is_recorded() -> None:
    decision = decide(pool(generation=9), observed(), T0)
    assert decision.status.observedGeneration == 9


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
    assert launch_asked(decide(gave_up, observed(), T0)) is None
    again = CLAIM.model_copy(update={"claimedAt": T0 + timedelta(minutes=5)})
    reclaimed = gave_up.model_copy(
        update={"spec": gave_up.spec.model_copy(update={"claim": again})}
    )
    decision = decide(reclaimed, observed(), T0 + timedelta(minutes=5))
    assert launch_asked(decision) is not None
    launch = decision.waiting_on
    assert isinstance(launch, Launch)  # the status written with the launch's result
    assert launch.status.consecutiveShortfalls == 0
    assert launch.status.claimKey == again.key


def created_at(stamp: str) -> GangNodePool:
    p = pool()
    return p.model_copy(update={"metadata": {**p.metadata, "creationTimestamp": stamp}})


def millis(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def test_generation_is_seeded_from_the_first_decision_in_milliseconds() -> None:
    p = created_at("2026-11-29T11:59:00Z")
    decision = decide(p, observed(), T0)
    assert decision.status.acquireGeneration == millis(T0)
    written = p.model_copy(update={"status": decision.status})
    again = launch_asked(decide(written, observed(), T0 + timedelta(seconds=3)))
    assert again is not None
    assert again.generation == millis(T0)  # a written seed is kept


def test_a_pool_created_again_inside_the_same_second_never_reuses_a_generation() -> None:
    """The e2e race: launched, deleted and created again within one creation second."""
    stamp = T0.strftime("%Y-%m-%dT%H:%M:%SZ")
    first = decide(created_at(stamp), observed(), T0 + timedelta(milliseconds=10))
    successor = created_at(stamp).model_copy(
        update={"metadata": {**created_at(stamp).metadata, "uid": "second-object"}}
    )
    second = decide(successor, observed(), T0 + timedelta(milliseconds=700))
    used = first.status.acquireGeneration
    assert second.status.acquireGeneration > used
    # Each of the predecessor's later attempts took a round trip: its generations stay
    # below its successor's seed even after a retry every millisecond.
    assert second.status.acquireGeneration > used + 600


def test_the_creation_time_is_a_floor_for_a_clock_behind_the_apiserver() -> None:
    ahead = T0 + timedelta(seconds=30)
    decision = decide(created_at(ahead.strftime("%Y-%m-%dT%H:%M:%SZ")), observed(), T0)
    assert decision.status.acquireGeneration == millis(ahead)


def test_lost_launch_found_after_abandon_is_released() -> None:
    p = pool(claim=None, phase="Acquiring", acquireGeneration=7)
    decision = decide(p, replace(observed(), found=instances()), T0)
    assert decision.status.phase == "Releasing"
    assert decision.status.instanceIds == IDS  # persisted before the terminate call
    assert decision.status.acquireGeneration == 8
    _, release = released_after_write_ahead(p, decision)
    asked = release_asked(release)
    assert asked is not None
    assert asked.instance_ids == tuple(IDS)


def test_abandon_after_an_unknown_launch_believes_an_empty_lookup_only_once_it_settled() -> None:
    """EC2's tag lookups lag new instances: right after a launch of unknown outcome,
    finding nothing by tag is no proof that nothing was launched."""
    unknown = PendingLaunch(
        generation=7, zone="us-east-1a", clientToken="ag-pretrain-g7-us-east-1a", recordedAt=T0
    )
    p = pool(claim=None, phase="Acquiring", acquireGeneration=7, pendingLaunch=unknown)
    early = decide(p, replace(observed(), found=()), T0 + timedelta(seconds=30))
    assert early.status.phase == "Acquiring"  # not Idle: it looks again
    assert early.requeue_after is not None
    assert 0 < early.requeue_after <= 90
    assert "looking for its instances by tag until" in early.status.lastError
    assert early.events == ()  # nothing abandoned yet
    # The set shows up in a later lookup: released by id like any lost launch.
    seen = decide(p, replace(observed(), found=instances()), T0 + timedelta(seconds=60))
    assert seen.status.phase == "Releasing"
    assert seen.status.instanceIds == IDS
    settled = decide(p, replace(observed(), found=()), T0 + KNOBS.lost_launch_settle)
    assert settled.status.phase == "Idle"
    # The finalizer waits the same way before it lets the pool go.
    deleting = pool(deleting=True, phase="Acquiring", acquireGeneration=7, pendingLaunch=unknown)
    held = decide(deleting, replace(observed(), found=()), T0 + timedelta(seconds=30))
    assert not held.remove_finalizer
    gone = decide(deleting, replace(observed(), found=()), T0 + KNOBS.lost_launch_settle)
    assert gone.remove_finalizer


def test_finalizer_while_acquiring_finds_lost_launches() -> None:
    p = pool(deleting=True, phase="Acquiring", acquireGeneration=3)
    first = decide(p, observed(), T0)
    assert first.parked
    assert first.waiting_on == FindByTag(3)
    decision = decide(p, replace(observed(), found=instances()), T0)
    assert decision.status.instanceIds == IDS
    assert not decision.remove_finalizer
    _, release = released_after_write_ahead(p, decision)
    assert release_asked(release) is not None
    assert not release.remove_finalizer
    nothing = decide(p, replace(observed(), found=()), T0)
    assert nothing.remove_finalizer


def test_a_join_timeout_with_no_node_at_all_says_access_is_re_checked_first() -> None:
    p = launched()
    timeout = decide(p, observed(()), T0 + timedelta(seconds=600))
    assert timeout.status.phase == "Releasing"
    assert timeout.status.lastError == (
        "Only 0/4 nodes became Ready before the join deadline; releasing the whole set and "
        "retrying (none joined: the next attempt first re-checks that the node role may join "
        "the cluster, its access entry or aws-auth mapping, and says so if it may not)"
    )
    some = decide(p, observed(nodes(4)[:1]), T0 + timedelta(seconds=600))
    assert "none joined" not in (some.status.lastError or "")

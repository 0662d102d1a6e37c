"""Each outcome says its Event and metrics in one place; a Decision's events and metrics are
read from its outcomes, in order."""

from __future__ import annotations

from dataclasses import replace
from typing import get_args

from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool import outcomes as o
from atomic_gang_provisioner.pool.driver import Decision
from tests.support.pools import pool

EXAMPLES: tuple[o.Outcome, ...] = (
    o.Launched(
        adopted=False,
        mode="runinstances",
        instance_type="p4d.24xlarge",
        zones=("us-east-1a",),
        instance_ids=("i-1", "i-2"),
    ),
    o.LaunchRetried(mode="fleet"),
    o.AttemptFailed(
        reason=FailureReason.INSUFFICIENT_CAPACITY,
        result="capacity",
        mode="runinstances",
        shape="2×p4d.24xlarge (runinstances, us-east-1a)",
        attempt=3,
        attempts=20,
        detail="no room",
    ),
    o.AttemptFellShort(reason=FailureReason.TOPOLOGY_SPREAD),
    o.WaitingForReservation(message="cr-1 starts at 12:00Z"),
    o.AcquisitionAbandoned(),
    o.Satisfied(nodes=2, group="g1", since_acquiring=3.0, since_launch=2.0),
    o.SpreadMeasured(pool="p", nodes=2),
    o.TopologyUnavailable(error="throttled"),
    o.KeptWarm(nodes=2, until="2026-01-01T00:10:00Z", ttl="10m0s"),
    o.KeepWarmReused(nodes=2, claimant="team-a/job-1"),
    o.ReleaseStarted(reason=FailureReason.JOIN_TIMEOUT, message="only 1/2 Ready"),
    o.Released(instances=2),
    o.Degraded(message="node n1 NotReady"),
    o.NodesBroken(nodes=1, of=4, detail="i-1: AcceleratedHardwareReady=False", repairing=True),
    o.RepairLaunched(instance_ids=("i-9",), zones=("us-east-1a",)),
    o.NodesReplaced(
        pool="p",
        replaced=("i-1",),
        by=("i-9",),
        reason="NodeUnhealthy",
        seconds=95.0,
        kept_instance_seconds=10800.0,
        repairs=1,
    ),
    o.RepairGivenUp(
        pool="p", reason="NodeUnhealthy", limit="RepairDeadline", message="not Ready in time"
    ),
    o.BlockDrain(message="drain point reached"),
    o.BlockEnding(message="checkpoint now"),
    o.Finalizing(instances=2),
    o.GroupDeleted(name="pg-1"),
)


def test_the_examples_cover_every_kind_of_outcome() -> None:
    assert {type(x) for x in EXAMPLES} == set(get_args(o.Outcome))


def test_every_outcome_is_told_by_an_event_or_counted_by_a_metric() -> None:
    silent = [
        type(x).__name__ for x in EXAMPLES if not (x.announce().event or x.announce().metrics)
    ]
    assert silent == []


def test_a_launch_and_an_adoption_are_told_and_counted_apart() -> None:
    launched = EXAMPLES[0]
    assert isinstance(launched, o.Launched)
    adopted = replace(launched, adopted=True, waited=90.0)
    first, second = launched.announce(), adopted.announce()
    assert first.event is not None
    assert second.event is not None
    assert (first.event.reason, second.event.reason) == ("Launched", "Adopted")
    assert first.event.message == "Launched 2×p4d.24xlarge in us-east-1a: i-1 i-2"
    assert first.metrics == (o.Acquisition("runinstances", "launched"),)
    assert second.metrics == (o.Acquisition("runinstances", "adopted"), o.BlockWait(90.0))


def test_a_failed_attempt_warns_under_its_reason_and_counts_the_shortfall() -> None:
    failed = EXAMPLES[2]
    said = failed.announce()
    assert said.event is not None
    assert (said.event.type, said.event.reason) == ("Warning", "InsufficientCapacity")
    assert said.event.message == (
        "Acquiring 2×p4d.24xlarge (runinstances, us-east-1a) (attempt 3/20): no room; "
        "nothing billed"
    )
    assert said.metrics == (
        o.Acquisition("runinstances", "capacity"),
        o.ShortfallCounted(FailureReason.INSUFFICIENT_CAPACITY),
    )


def test_a_planned_release_is_normal_and_a_release_for_a_reason_warns() -> None:
    planned = o.ReleaseStarted(reason="KeepWarmExpired", message="over", planned=True)
    forced = o.ReleaseStarted(reason=FailureReason.JOIN_TIMEOUT, message="late")
    told = [x.announce().event for x in (planned, forced)]
    assert [e.type if e else None for e in told] == ["Normal", "Warning"]


def test_a_turn_reads_its_events_and_metrics_from_its_outcomes_in_order() -> None:
    # A spread (a metric alone), then satisfied (an Event and timings).
    decision = Decision(status=pool().status, outcomes=(EXAMPLES[7], EXAMPLES[6]))
    assert [e.reason for e in decision.events] == ["Satisfied"]
    assert decision.metrics == (o.Spread("p", 2), o.TimeToSatisfied(3.0), o.JoinDuration(2.0))


def test_a_repair_is_counted_by_what_broke_and_how_it_ended() -> None:
    replaced = next(x for x in EXAMPLES if isinstance(x, o.NodesReplaced)).announce()
    given_up = next(x for x in EXAMPLES if isinstance(x, o.RepairGivenUp)).announce()
    assert o.RepairCounted("p", "NodeUnhealthy", "replaced") in replaced.metrics
    assert o.RepairDuration(95.0) in replaced.metrics
    assert o.KeptInstanceSeconds(10800.0) in replaced.metrics
    assert given_up.metrics == (o.RepairCounted("p", "NodeUnhealthy", "released"),)
    assert replaced.event is not None
    assert replaced.event.reason == "NodeReplaced"
    assert given_up.event is not None
    assert given_up.event.type == "Warning"

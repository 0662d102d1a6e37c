"""Whose turn it is: EC2's launch budget, longest-waiting first, and short capacity cells."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from atomic_gang import GangSpec, GoDuration
from atomic_gang_provisioner.cloud.budget import ApiBudget, BucketSpec, BudgetLimits
from atomic_gang_provisioner.cloud.capacity import Cell, ShortCells
from atomic_gang_provisioner.cloud.launchgate import LaunchGate
from atomic_gang_provisioner.cloud.types import AcquireRequest, Waiting

T0 = datetime(2026, 12, 1, tzinfo=UTC)
P4D_A = Cell("p4d.24xlarge", "us-east-1a")


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def request(pool: str, waited: int) -> AcquireRequest:
    spec = GangSpec(
        pool=pool,
        count=8,
        instance_type="p4d.24xlarge",
        region="us-east-1",
        node_role_arn="arn:aws:iam::123456789012:role/node",
        keep_warm_ttl=GoDuration.of(minutes=10),
        max_lifetime=GoDuration.of(hours=4),
        mode="runinstances",
        ami_variant="nvidia",
    )
    return AcquireRequest(spec=spec, generation=1, waiting_since=T0 - timedelta(seconds=waited))


def test_the_longest_waiting_pool_launches_first_and_the_others_count_who_is_ahead() -> None:
    clock = Clock()
    limits = BudgetLimits(run_instances=BucketSpec(1, 2))
    budget = ApiBudget(limits=limits, clock=clock)
    budget.take("run_instances")  # spent: everyone waits
    gate = LaunchGate(budget=budget, clock=clock)
    answers = {
        p: gate.admit(request(p, w), operation="run_instances")
        for p, w in [("newest", 1), ("oldest", 30), ("middle", 10)]
    }
    assert all(isinstance(a, Waiting) for a in answers.values())
    assert isinstance(answers["newest"], Waiting)
    third = gate.admit(request("newest", 1), operation="run_instances")
    assert isinstance(third, Waiting)
    assert third.message == "waiting for EC2's launch budget: 2 pools ahead"
    assert third.reason == "WaitingForLaunchBudget"
    clock.t += 0.5  # one token back: only the oldest may take it
    assert isinstance(gate.admit(request("middle", 10), operation="run_instances"), Waiting)
    assert gate.admit(request("oldest", 30), operation="run_instances") is None
    budget.take("run_instances")
    later = gate.admit(request("newest", 1), operation="run_instances")
    assert isinstance(later, Waiting)
    assert later.message == "waiting for EC2's launch budget: 1 pool ahead"
    assert later.retry_after > 0.5  # after the token of the pool ahead of it


def test_a_known_short_cell_is_probed_only_by_its_longest_waiting_pool() -> None:
    clock = Clock()
    cells = ShortCells(clock=clock)
    assert cells.turn(P4D_A, pool="any", since=1.0) is None  # not known short: try it
    cells.mark_short(P4D_A)
    assert cells.turn(P4D_A, pool="b", since=20.0) == 0
    assert cells.turn(P4D_A, pool="a", since=10.0) == 0  # waited longer: a probes
    assert cells.turn(P4D_A, pool="b", since=20.0) == 1
    assert cells.turn(P4D_A, pool="c", since=30.0) == 2
    assert str(P4D_A) == "p4d.24xlarge in us-east-1a"


def test_a_release_or_a_launch_clears_the_cell_at_once() -> None:
    clock = Clock()
    cells = ShortCells(clock=clock)
    cells.mark_short(P4D_A)
    cells.turn(P4D_A, pool="a", since=1.0)
    cells.released("p4d.24xlarge")
    assert cells.turn(P4D_A, pool="b", since=2.0) is None
    cells.mark_short(P4D_A)
    cells.launched(P4D_A, "b")
    assert cells.turn(P4D_A, pool="c", since=3.0) is None
    other = Cell("p5.48xlarge", "us-east-1a")
    cells.mark_short(other)
    cells.released("p4d.24xlarge")
    assert cells.turn(other, pool="c", since=3.0) == 0  # another type stays short


def test_a_short_mark_expires_after_its_ttl() -> None:
    clock = Clock()
    cells = ShortCells(clock=clock, ttl_seconds=60)
    cells.mark_short(P4D_A)
    clock.t += 61
    assert cells.turn(P4D_A, pool="a", since=1.0) is None


def test_short_cell_seconds_zero_turns_the_cache_off() -> None:
    """ec2Api.shortCellSeconds: 0 (what bench.idle_cost compares against): every pool
    probes on its own backoff, as before the cache."""
    cells = ShortCells(clock=Clock(), ttl_seconds=0)
    cells.mark_short(P4D_A)
    assert cells.turn(P4D_A, pool="a", since=1.0) is None
    assert cells.turn(P4D_A, pool="b", since=2.0) is None


def test_a_placement_groups_shortfall_is_its_own_cell() -> None:
    """A cluster group holds its own capacity: one pool's group coming back short does
    not make a pool with another group wait (nor the AZ without a group)."""
    cells = ShortCells(clock=Clock())
    mine = Cell("p4d.24xlarge", "us-east-1a", placement_group="atomic-gang-c-a-1")
    cells.mark_short(mine)
    assert cells.turn(mine, pool="a", since=1.0) == 0  # a, alone in its line, probes it
    other = Cell("p4d.24xlarge", "us-east-1a", placement_group="atomic-gang-c-b-2")
    assert cells.turn(other, pool="b", since=2.0) is None
    assert cells.turn(P4D_A, pool="c", since=3.0) is None
    assert str(mine) == "p4d.24xlarge in us-east-1a (group atomic-gang-c-a-1)"

"""Our mirror of EC2's token buckets: per action class, refill, reserve, throttle sync."""

from __future__ import annotations

import pytest

from atomic_gang_provisioner.cloud.turns.budget import (
    ApiBudget,
    BucketSpec,
    BudgetLimits,
    action_class,
)
from tests.support.clock import ManualClock


@pytest.mark.parametrize(
    ("operation", "cls"),
    [
        pytest.param("run_instances", "run_instances", id="launch"),
        pytest.param("describe_instances", "non_mutating", id="describe"),
        pytest.param("get_parameter", "non_mutating", id="get"),
        pytest.param("terminate_instances", "mutating", id="terminate"),
        pytest.param("create_tags", "mutating", id="tags"),
        pytest.param("create_fleet", "mutating", id="fleet"),
    ],
)
def test_each_operation_draws_from_its_class(operation: str, cls: str) -> None:
    assert action_class(operation) == cls


def test_run_instances_bursts_four_of_ec2s_five_then_refills_at_two_per_second() -> None:
    clock = ManualClock(start=100.0)
    budget = ApiBudget(limits=BudgetLimits(), clock=clock)
    assert [budget.take("run_instances", instances=1) for _ in range(4)] == [0.0] * 4
    assert budget.take("run_instances", instances=1) == pytest.approx(0.5)
    clock.advance(0.5)
    assert budget.take("run_instances", instances=1) == 0.0
    assert budget.take("describe_instances") == 0.0  # other classes are untouched


def test_the_instance_bucket_limits_big_launches() -> None:
    clock = ManualClock(start=100.0)
    limits = BudgetLimits(run_instances_instances=BucketSpec(10, 2))
    budget = ApiBudget(limits=limits, clock=clock)
    assert budget.take("run_instances", instances=8) == 0.0
    assert budget.take("run_instances", instances=8) == pytest.approx(3.0)  # 6 more at 2/s
    assert budget.wait("run_instances", instances=2) == 0.0


def test_reserve_keeps_tokens_for_those_ahead_and_take_nothing_when_short() -> None:
    clock = ManualClock(start=100.0)
    budget = ApiBudget(limits=BudgetLimits(), clock=clock)
    assert budget.take("run_instances", reserve=4) == pytest.approx(0.5)
    assert budget.wait("run_instances", reserve=3) == 0.0  # the 4 tokens are all still here
    assert budget.wait("run_instances", reserve=12) == pytest.approx(4.5)  # 13 needed, 4 here


def test_a_throttle_from_ec2_empties_our_bucket_and_hints_the_refill() -> None:
    clock = ManualClock(start=100.0)
    budget = ApiBudget(limits=BudgetLimits(), clock=clock)
    assert budget.throttled("run_instances") == pytest.approx(0.5)
    assert budget.take("run_instances") == pytest.approx(0.5)
    assert budget.throttled("describe_instances") == pytest.approx(0.05)


def test_the_token_in_hand_absorbs_calls_that_reach_ec2_bunched() -> None:
    """EC2's bucket (5 at 2/s) sees our calls late and closer together than we sent them:
    sent on our budget's schedule, each arriving up to 0.4 s late, none is throttled."""
    clock = ManualClock(start=100.0)
    budget = ApiBudget(limits=BudgetLimits(), clock=clock)
    ec2_level, ec2_stamp, throttled = 5.0, clock(), 0
    for n in range(40):
        while (wait := budget.take("run_instances")) > 0:
            clock.advance(wait)
        arrival = clock() + (0.4 if n % 3 == 0 else 0.0)  # every third one held up
        ec2_level = min(5.0, ec2_level + max(0.0, arrival - ec2_stamp) * 2)
        ec2_stamp = max(ec2_stamp, arrival)
        if ec2_level >= 1 - 1e-9:
            ec2_level -= 1
        else:
            throttled += 1
    assert throttled == 0


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="capacity"):
        BucketSpec(0, 1)


def test_a_refill_that_falls_short_by_a_rounding_error_counts_as_whole() -> None:
    clock = ManualClock(start=1000.0)
    budget = ApiBudget(limits=BudgetLimits(non_mutating=BucketSpec(1, 3)), clock=clock)
    budget.take("describe_instances")
    clock.advance(budget.wait("describe_instances"))  # 1/3 s: not exact in floating point
    assert budget.take("describe_instances") == 0.0

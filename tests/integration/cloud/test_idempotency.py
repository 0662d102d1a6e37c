"""Never two sets for one (pool, generation): tokens, retries, lost answers, crashes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    RetryLater,
    Shortfall,
    UnknownLaunch,
    Waiting,
)
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from tests.integration.cloud.conftest import TYPE, backend, pool_instances
from tests.support.clock import ManualClock

Spec = Callable[..., GangSpec]


def tokens(fake: FakeAws, action: str = "RunInstances") -> list[str]:
    return [c["params"].get("ClientToken", "") for c in fake.calls(action)]


def test_lost_response_is_retried_with_the_same_token_and_adopts(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.add_rule({"action": "RunInstances", "effect": "lost_response"})
    result = provider.acquire(AcquireRequest(spec=make_spec(count=3), generation=2))
    assert isinstance(result, Launched)
    assert [c["outcome"] for c in fake.calls("RunInstances")] == ["lost", "ok"]
    assert tokens(fake) == ["ag-train-g2-us-east-1a"] * 2
    assert sorted(i.id for i in pool_instances("train")) == sorted(result.instance_ids)


def test_lost_fleet_response_returns_the_same_fleet(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.add_rule({"action": "CreateFleet", "effect": "lost_response"})
    result = provider.acquire(AcquireRequest(spec=make_spec(mode="fleet", count=2), generation=0))
    assert isinstance(result, Launched)
    assert tokens(fake, "CreateFleet") == ["ag-train-g0-fleet"] * 2
    assert len(pool_instances("train")) == 2


def test_crash_before_ids_were_persisted_adopts_by_tag(
    make_provider: Callable[..., Ec2Provider], make_spec: Spec, fake: FakeAws
) -> None:
    request = AcquireRequest(spec=make_spec(count=3), generation=5)
    first = make_provider().acquire(request)
    assert isinstance(first, Launched)
    # The controller dies here; a new process knows only the generation.
    again = make_provider().acquire(request)
    assert isinstance(again, Launched)
    assert again.adopted
    assert sorted(again.instance_ids) == sorted(first.instance_ids)
    assert len(fake.calls("RunInstances")) == 1
    assert len(pool_instances("train", 5)) == 3


def test_retry_budget_exhausted_then_next_attempt_adopts(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.add_rule({"action": "RunInstances", "effect": "lost_response", "times": 10})
    request = AcquireRequest(spec=make_spec(count=2), generation=0)
    lost = provider.acquire(request)
    assert isinstance(lost, RetryLater)
    assert not lost.terminal
    assert lost.code == "ReadTimeout"
    fake.clear_rules()
    assert len(provider.find(pool="train", generation=0)) == 2
    assert provider.find(pool="train", generation=1) == ()
    found = provider.acquire(request)
    assert isinstance(found, Launched)
    assert found.adopted
    assert len(pool_instances("train")) == 2
    assert set(tokens(fake)) == {"ag-train-g0-us-east-1a"}


def test_a_throttled_launch_is_retried_after_the_hint_with_the_same_token(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, admin: dict[str, Any], clock: ManualClock
) -> None:
    for _ in range(5):  # another launcher in the account drains RunInstances' burst of 5
        admin["ec2"].run_instances(ImageId="ami-12345678", MinCount=1, MaxCount=1)
    request = AcquireRequest(spec=make_spec(count=2), generation=0)
    throttled = provider.acquire(request)
    assert isinstance(throttled, RetryLater)  # no sleep inside the call: the pool requeues
    assert throttled.code == "RequestLimitExceeded"
    assert throttled.launched_nothing
    assert throttled.retry_after == pytest.approx(0.5)  # one token at EC2's 2/s refill
    assert not clock.slept
    early = provider.acquire(replace(request, adopt=False))
    assert isinstance(early, Waiting)  # our mirror of the bucket: no call before the hint
    assert throttled.retry_after is not None
    clock.advance(throttled.retry_after)
    reads = len(fake.calls("DescribeInstances"))
    result = provider.acquire(replace(request, adopt=False))
    assert isinstance(result, Launched)
    assert len(fake.calls("DescribeInstances")) == reads  # no second adoption read
    outcomes = [c["outcome"] for c in fake.calls("RunInstances")][5:]
    assert outcomes == ["error:RequestLimitExceeded", "ok"]
    assert len(set(tokens(fake)[5:])) == 1


def test_injected_5xx_is_retried(provider: Ec2Provider, make_spec: Spec, fake: FakeAws) -> None:
    fake.add_rule({"action": "RunInstances", "code": "InternalError", "status": 500, "times": 2})
    result = provider.acquire(AcquireRequest(spec=make_spec(count=1), generation=0))
    assert isinstance(result, Launched)
    assert [c["outcome"] for c in fake.calls("RunInstances")] == [
        "error:InternalError",
        "error:InternalError",
        "ok",
    ]


def test_a_replayed_set_that_is_gone_is_never_reported_launched(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, admin: dict[str, Any]
) -> None:
    request = AcquireRequest(spec=make_spec(count=2), generation=0)
    first = provider.acquire(request)
    assert isinstance(first, Launched)
    admin["ec2"].terminate_instances(InstanceIds=list(first.instance_ids))
    for inst in backend().all_instances():  # the set was launched a while ago
        inst.launch_time -= timedelta(minutes=10)
    again = provider.acquire(request)
    assert isinstance(again, Shortfall)
    assert again.terminal
    assert again.attempts[0].code == "MalformedResponse"
    assert pool_instances("train") == []


def test_changed_inputs_under_one_token_move_on(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, admin: dict[str, Any]
) -> None:
    first = provider.acquire(AcquireRequest(spec=make_spec(count=2), generation=0))
    assert isinstance(first, Launched)
    admin["ec2"].terminate_instances(InstanceIds=list(first.instance_ids))
    changed = provider.acquire(AcquireRequest(spec=make_spec(count=3), generation=0))
    assert isinstance(changed, Launched)
    assert [c["outcome"] for c in fake.calls("RunInstances")][1:] == [
        "error:IdempotentParameterMismatch",
        "ok",
    ]
    assert {i.availability_zone for i in changed.instances} == {"us-east-1b"}


def test_a_replayed_fleet_that_is_gone_is_never_reported_launched(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, admin: dict[str, Any]
) -> None:
    request = AcquireRequest(spec=make_spec(mode="fleet", count=2), generation=0)
    first = provider.acquire(request)
    assert isinstance(first, Launched)
    admin["ec2"].terminate_instances(InstanceIds=list(first.instance_ids))
    again = provider.acquire(request)
    # EC2 replayed the original answer for the reused token: the same, dead, ids.
    assert tokens(fake, "CreateFleet") == ["ag-train-g0-fleet"] * 2
    assert isinstance(again, Shortfall)
    assert again.attempts[0].code == "MalformedResponse"
    assert sorted(again.rolled_back) == sorted(first.instance_ids)
    assert pool_instances("train") == []


def test_a_partial_set_found_after_a_crash_is_rolled_back(
    make_provider: Callable[..., Ec2Provider],
    make_spec: Spec,
    fake: FakeAws,
    admin: dict[str, Any],
) -> None:
    request = AcquireRequest(spec=make_spec(count=3), generation=0)
    first = make_provider().acquire(request)
    assert isinstance(first, Launched)
    gone, *kept = first.instance_ids
    admin["ec2"].terminate_instances(InstanceIds=[gone])
    # The controller died before persisting the ids; a new one finds 2 of 3.
    again = make_provider().acquire(request)
    assert isinstance(again, Shortfall)
    assert again.terminal
    assert again.attempts[0].code == "PartialSetFound"
    assert sorted(again.rolled_back) == sorted(kept)
    assert pool_instances("train") == []
    assert len(fake.calls("RunInstances")) == 1


def _lost_in_zone_b(fake: FakeAws, world: World) -> None:
    """Zone a full; every answer from zone b lost (past the retry budget) after EC2 acted."""
    fake.set_capacity("us-east-1a", TYPE, 0)
    fake.add_rule(
        {
            "action": "RunInstances",
            "effect": "lost_response",
            "times": 10,
            "match": {"SubnetId": world.subnets["us-east-1b"]},
        }
    )


def _room_again_and_reads_lag(fake: FakeAws) -> None:
    fake.clear_rules()
    fake.set_capacity("us-east-1a", TYPE, None)
    fake.add_rule(
        {"action": "DescribeInstances", "effect": "stale_read", "seconds": 60, "times": None}
    )


def test_an_unknown_launch_is_replayed_before_an_earlier_zone_that_has_room_again(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, world: World
) -> None:
    """Zone b's answer is lost after EC2 launched the set; zone a has room by the next
    attempt and the tag lookup misses the new set (EC2 reads lag): the unknown launch
    is sent again first, and EC2's idempotency hands back the one set."""
    _lost_in_zone_b(fake, world)
    request = AcquireRequest(spec=make_spec(count=2), generation=0)
    lost = provider.acquire(request)
    assert isinstance(lost, RetryLater)
    assert lost.unknown == UnknownLaunch(zone="us-east-1b", token="ag-train-g0-us-east-1b")
    _room_again_and_reads_lag(fake)
    assert provider.find(pool="train", generation=0) == ()  # the lookup misses the set

    again = provider.acquire(replace(request, replay=lost.unknown))

    assert isinstance(again, Launched)
    assert {i.availability_zone for i in again.instances} == {"us-east-1b"}
    assert len(pool_instances("train")) == 2  # one set, never two
    zones = [c["params"]["SubnetId"] for c in fake.calls("RunInstances")][-1:]
    assert zones == [world.subnets["us-east-1b"]]  # zone a was never asked


def test_without_the_replay_the_sweep_would_launch_a_second_set(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, world: World
) -> None:
    """Why the replay exists: the same scene, the next attempt sweeping from zone a."""
    _lost_in_zone_b(fake, world)
    request = AcquireRequest(spec=make_spec(count=2), generation=0)
    assert isinstance(provider.acquire(request), RetryLater)
    _room_again_and_reads_lag(fake)
    assert isinstance(provider.acquire(request), Launched)
    assert len(pool_instances("train")) == 4  # billed twice


def test_a_replay_that_ec2_refuses_moves_the_sweep_on(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, world: World
) -> None:
    """A refusal (no capacity) is EC2's answer: nothing exists, the other zones follow."""
    fake.set_capacity("us-east-1b", TYPE, 0)
    request = AcquireRequest(
        spec=make_spec(count=2),
        generation=0,
        replay=UnknownLaunch(zone="us-east-1b", token="ag-train-g0-us-east-1b"),
    )
    result = provider.acquire(request)
    assert isinstance(result, Launched)
    assert {i.availability_zone for i in result.instances} == {"us-east-1a"}
    subnets = [c["params"]["SubnetId"] for c in fake.calls("RunInstances")]
    assert subnets == [world.subnets["us-east-1b"], world.subnets["us-east-1a"]]

"""runinstances mode: Min==Max==N into one AZ, AZ sweep, validation, results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    PermanentFailure,
    QuotaExceeded,
    Shortfall,
)
from atomic_gang_provisioner.cloud.aws import Ec2Provider, acquire, launch
from tests.integration.cloud.conftest import TYPE, pool_instances

Spec = Callable[..., GangSpec]


def test_one_launch_call_with_min_equals_max(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, world: World
) -> None:
    result = provider.acquire(AcquireRequest(spec=make_spec(count=3), generation=0))
    assert isinstance(result, Launched)
    assert len(set(result.instance_ids)) == 3
    (run,) = fake.calls("RunInstances")
    assert run["params"]["MinCount"] == run["params"]["MaxCount"] == "3"
    assert run["params"]["SubnetId"] == world.subnets["us-east-1a"]
    assert run["params"]["ClientToken"] == "ag-train-g0-us-east-1a"
    assert {i.availability_zone for i in result.instances} == {"us-east-1a"}
    assert all(i.provider_id == f"aws:///us-east-1a/{i.instance_id}" for i in result.instances)


def test_capacity_error_moves_the_sweep_to_the_next_az(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.set_capacity("us-east-1a", TYPE, 2)
    result = provider.acquire(AcquireRequest(spec=make_spec(count=3), generation=0))
    assert isinstance(result, Launched)
    assert {i.availability_zone for i in result.instances} == {"us-east-1b"}
    outcomes = [(c["params"]["SubnetId"], c["outcome"]) for c in fake.calls("RunInstances")]
    assert [o for _, o in outcomes] == ["error:InsufficientInstanceCapacity", "ok"]
    assert len(pool_instances("train")) == 3


def test_shortfall_everywhere_launches_nothing(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    for zone in ("us-east-1a", "us-east-1b", "us-east-1c"):
        fake.set_capacity(zone, TYPE, 2)
    result = provider.acquire(AcquireRequest(spec=make_spec(count=3), generation=0))
    assert isinstance(result, Shortfall)
    assert [a.zone for a in result.attempts] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert {a.code for a in result.attempts} == {"InsufficientInstanceCapacity"}
    assert pool_instances("train") == []
    assert result.terminal


def test_annotation_zone_order_is_the_sweep_order(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.set_capacity("us-east-1c", TYPE, 0)
    spec = make_spec(availability_zones=("us-east-1c", "us-east-1b"))
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched)
    tokens = [c["params"]["ClientToken"] for c in fake.calls("RunInstances")]
    assert tokens == ["ag-train-g0-us-east-1c", "ag-train-g0-us-east-1b"]


def test_explicit_subnets_win(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, world: World
) -> None:
    spec = make_spec(subnets=(world.subnets["us-east-1c"],))
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched)
    (run,) = fake.calls("RunInstances")
    assert run["params"]["SubnetId"] == world.subnets["us-east-1c"]


def test_a_malformed_answer_is_rolled_back(
    provider: Ec2Provider, make_spec: Spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EC2 never answers Min==Max==N with fewer ids; asking moto for 2 stands in for it.
    original = launch.run_instances_params

    def fewer(*args: Any) -> dict[str, Any]:
        return {**original(*args), "MinCount": 2, "MaxCount": 2}

    monkeypatch.setattr(acquire, "run_instances_params", fewer)
    result = provider.acquire(AcquireRequest(spec=make_spec(count=3), generation=0))
    assert isinstance(result, Shortfall)
    assert result.attempts[0].code == "MalformedResponse"
    assert len(result.rolled_back) == 2
    assert pool_instances("train") == []


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        pytest.param("VcpuLimitExceeded", 400, QuotaExceeded, id="quota"),
        pytest.param("InstanceLimitExceeded", 400, QuotaExceeded, id="instance-quota"),
        pytest.param("InvalidAMIID.NotFound", 400, PermanentFailure, id="bad-ami"),
        pytest.param("UnauthorizedOperation", 403, PermanentFailure, id="unauthorized"),
    ],
)
def test_quota_and_permanent_errors_stop_the_sweep_verbatim(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, code: str, status: int, kind: type
) -> None:
    message = f"{code}: as AWS worded it"
    fake.add_rule({"action": "RunInstances", "code": code, "status": status, "message": message})
    result = provider.acquire(AcquireRequest(spec=make_spec(), generation=0))
    assert isinstance(result, kind)
    assert isinstance(result, QuotaExceeded | PermanentFailure)
    assert result.code == code
    assert result.message == message
    assert result.terminal
    if isinstance(result, PermanentFailure):
        assert result.hint
    assert len(fake.calls("RunInstances")) == 1
    assert pool_instances("train") == []

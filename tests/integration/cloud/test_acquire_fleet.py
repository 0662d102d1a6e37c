"""fleet mode: one instant CreateFleet, MinTargetCapacity = N, multi-AZ, validated."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    PermanentFailure,
    QuotaExceeded,
    ReleaseRequest,
    Shortfall,
)
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from tests.integration.cloud.conftest import TYPE, backend, pool_instances, tags_of

Spec = Callable[..., GangSpec]


def test_one_instant_fleet_over_every_az(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.set_capacity("us-east-1a", TYPE, 1)
    fake.set_capacity("us-east-1b", TYPE, 1)
    result = provider.acquire(AcquireRequest(spec=make_spec(mode="fleet", count=3), generation=4))
    assert isinstance(result, Launched)
    assert result.fleet_id
    assert result.client_token == "ag-train-g4-fleet"
    assert sorted(i.availability_zone for i in result.instances) == [
        "us-east-1a",
        "us-east-1b",
        "us-east-1c",
    ]
    (call,) = fake.calls("CreateFleet")
    p = call["params"]
    assert p["Type"] == "instant"
    assert p["TargetCapacitySpecification.TotalTargetCapacity"] == "3"
    assert p["OnDemandOptions.MinTargetCapacity"] == "3"
    assert p["OnDemandOptions.SingleInstanceType"] == "true"
    assert sum(1 for k in p if k.endswith(".SubnetId")) == 3
    for inst in pool_instances("train", 4):
        assert tags_of(inst.id)["aws:ec2:fleet-id"] == result.fleet_id
        assert inst.client_token == "ag-train-g4-fleet"


def test_fleet_shortfall_launches_nothing(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    for zone in ("us-east-1a", "us-east-1b", "us-east-1c"):
        fake.set_capacity(zone, TYPE, 1)
    result = provider.acquire(AcquireRequest(spec=make_spec(mode="fleet", count=4), generation=0))
    assert isinstance(result, Shortfall)
    assert {a.code for a in result.attempts} == {"InsufficientInstanceCapacity"}
    assert pool_instances("train") == []


def test_malformed_fleet_is_terminated_at_once(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.add_rule({"action": "CreateFleet", "effect": "malformed_fleet", "drop": 1})
    result = provider.acquire(AcquireRequest(spec=make_spec(mode="fleet", count=3), generation=0))
    assert isinstance(result, Shortfall)
    assert result.attempts[0].code == "MalformedResponse"
    assert len(result.rolled_back) == 2
    # The unreported third instance goes too: the fleet is deleted with its instances.
    assert pool_instances("train") == []
    assert len(fake.calls("DeleteFleets")) == 1
    assert fake.calls("DeleteFleets")[0]["params"]["TerminateInstances"] == "true"


def test_generation_versions_are_reused_then_pruned(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    spec = make_spec(mode="fleet", count=1)
    first = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(first, Launched)
    provider.release(
        ReleaseRequest(instance_ids=first.instance_ids, fleet_ids=(first.fleet_id or "",))
    )
    second = provider.acquire(AcquireRequest(spec=spec, generation=1))
    assert isinstance(second, Launched)
    (template,) = backend().launch_templates.values()
    live_versions = [
        v.description
        for v in template.versions
        if v.number not in getattr(template, "fake_deleted_versions", set())
    ]
    assert live_versions == [live_versions[0], "ag-train-g1-fleet"]
    assert live_versions[0].startswith("base-")
    assert len(fake.calls("DeleteLaunchTemplateVersions")) == 1


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        pytest.param("UnauthorizedOperation", PermanentFailure, id="unauthorized"),
        pytest.param("InvalidAMIID.NotFound", PermanentFailure, id="bad-ami"),
        pytest.param("VcpuLimitExceeded", QuotaExceeded, id="quota"),
    ],
)
def test_errors_inside_the_fleet_answer_are_classified(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, code: str, kind: type
) -> None:
    fake.add_rule(
        {"action": "CreateFleet", "effect": "fleet_error", "code": code, "message": "no: " + code}
    )
    result = provider.acquire(AcquireRequest(spec=make_spec(mode="fleet", count=2), generation=0))
    assert isinstance(result, kind)
    assert isinstance(result, PermanentFailure | QuotaExceeded)
    assert result.code == code
    assert result.message == "no: " + code
    (call,) = fake.calls("CreateFleet")
    assert call["outcome"] == "ok"  # a 200 answer: the error is only in Errors[]
    assert pool_instances("train") == []

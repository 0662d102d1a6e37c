"""docs/iam/controller-policy.json with placement groups, EFA and topology, moto IAM on
(the companion of test_iam_policy): the lifecycle is allowed, and the placement group
statements reach no group that is not ours."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_provisioner.cloud import AcquireRequest, Launched, ReleaseRequest
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from tests.integration.cloud.conftest import REGION, live
from tests.integration.cloud.test_iam_policy import (
    DENIED,
    Keyed,
    controller,
    denied_calls,
    enforced,
    error_codes,
    make_controller,
)

__all__ = ["controller", "make_controller"]  # fixtures, shared with test_iam_policy
Spec = Callable[..., GangSpec]


def test_placement_efa_and_topology_are_allowed(
    controller: tuple[Ec2Provider, Keyed], make_spec: Spec, fake: FakeAws
) -> None:
    engine, _ = controller

    def lifecycle() -> None:
        spec = make_spec(pool="net", count=2, placement="cluster", efa="max")
        launched = engine.acquire(AcquireRequest(spec=spec, generation=0))
        assert isinstance(launched, Launched), launched
        assert engine.read_topology_later(launched.instance_ids).result().spread == 1
        assert [g.pool for g in engine.list_placement_groups()] == ["net"]
        assert engine.release(ReleaseRequest(instance_ids=launched.instance_ids)).done
        assert engine.delete_placement_group("net") is True

    enforced(lifecycle)
    assert denied_calls(fake) == []
    assert live() == []
    ok = {c["action"] for c in fake.calls() if c["outcome"] == "ok"}
    assert {
        "CreatePlacementGroup",
        "DescribePlacementGroups",
        "DeletePlacementGroup",
        "DescribeSecurityGroups",
        "DescribeInstanceTopology",
        "DescribeInstanceTypes",
    } <= ok


def tagged(managed: str) -> list[dict[str, Any]]:
    tags = [{"Key": "atomic-gang.k8s.aws/managed", "Value": managed}]
    return [{"ResourceType": "placement-group", "Tags": tags}]


def test_placement_group_statements_are_bounded_to_ours(
    controller: tuple[Ec2Provider, Keyed], admin: dict[str, Any], fake: FakeAws
) -> None:
    _, keyed = controller
    ec2 = keyed.client("ec2", region_name=REGION)
    admin["ec2"].create_placement_group(GroupName="atomic-gang-theirs", Strategy="cluster")
    admin["ec2"].create_placement_group(
        GroupName="other-team", Strategy="cluster", TagSpecifications=tagged("true")
    )
    probes: dict[str, Callable[[], Any]] = {
        "create-untagged": lambda: ec2.create_placement_group(
            GroupName="atomic-gang-x", Strategy="cluster"
        ),
        "create-outside-prefix": lambda: ec2.create_placement_group(
            GroupName="not-ours", Strategy="cluster", TagSpecifications=tagged("true")
        ),
        "delete-unmanaged": lambda: ec2.delete_placement_group(GroupName="atomic-gang-theirs"),
        "delete-outside-prefix": lambda: ec2.delete_placement_group(GroupName="other-team"),
    }

    codes = enforced(lambda: error_codes(probes))
    assert set(codes) == set(probes)
    assert all(code in DENIED for code in codes.values()), codes
    names = [g["GroupName"] for g in admin["ec2"].describe_placement_groups()["PlacementGroups"]]
    assert names == ["atomic-gang-theirs", "other-team"]

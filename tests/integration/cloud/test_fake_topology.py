"""The layer's DescribeInstanceTopology (deterministic nodes, spill past a group's node
size, nothing for unsupported types, its own 1/s bucket) and the EFA self rule."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from tests.integration.cloud.conftest import CLUSTER, REGION
from tests.integration.cloud.test_fake_layer import code
from tests.integration.cloud.test_fake_layer import run as launch
from tests.integration.cloud.test_fake_placement import create
from tests.support.clock import ManualClock


def topology(ec2: Any, **kwargs: Any) -> dict[str, list[str]]:
    found = ec2.describe_instance_topology(**kwargs)["Instances"]
    return {i["InstanceId"]: i["NetworkNodes"] for i in found}


def test_a_cluster_group_shares_its_nodes_until_it_spills(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    create(ec2, "gang")
    fake.set_topology_node_size(3, group="gang")
    ids = launch(ec2, world, 4, Placement={"GroupName": "gang"})
    nodes = topology(ec2, InstanceIds=ids)
    assert sorted(nodes) == sorted(ids)
    assert {len(n) for n in nodes.values()} == {3}
    assert len({n[0] for n in nodes.values()}) == 1  # top and middle layers shared
    assert len({n[1] for n in nodes.values()}) == 1
    bottoms = sorted(n[2] for n in nodes.values())
    assert sorted(bottoms.count(b) for b in set(bottoms)) == [1, 3]  # 3 fit, 1 spills
    clock.sleep(1.0)
    row = ec2.describe_instance_topology(GroupNames=["gang"])["Instances"][0]
    assert row["GroupName"] == "gang"
    assert row["ZoneId"] == "use1-az6"
    assert row["AvailabilityZone"] == "us-east-1a"


def test_nodes_are_deterministic_and_others_are_spread(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    create(ec2, "gang")
    first = launch(ec2, world, 2, Placement={"GroupName": "gang"})
    loose = launch(ec2, world, 2)
    before = topology(ec2, InstanceIds=first + loose)
    ec2.terminate_instances(InstanceIds=first)
    again = launch(ec2, world, 2, Placement={"GroupName": "gang"})
    clock.sleep(1.0)
    after = topology(ec2, InstanceIds=again + loose)
    assert {tuple(after[i]) for i in again} == {tuple(before[first[0]])}  # same node again
    assert len({before[i][2] for i in loose}) == 2
    assert not {before[i][2] for i in loose} & {before[first[0]][2]}


def test_unsupported_types_and_stopped_instances_are_not_listed(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    small = ec2.run_instances(
        ImageId="ami-12345678",
        InstanceType="m5.large",
        MinCount=1,
        MaxCount=1,
        SubnetId=world.subnets["us-east-1a"],
    )["Instances"][0]["InstanceId"]
    assert topology(ec2, InstanceIds=[small]) == {}
    big = launch(ec2, world, 1)
    ec2.stop_instances(InstanceIds=big)
    clock.sleep(1.0)
    assert topology(ec2, InstanceIds=big) == {}


def test_its_throttling_bucket_is_one_a_second(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    ids = launch(ec2, world, 1)
    topology(ec2, InstanceIds=ids)
    with pytest.raises(ClientError) as err:
        topology(ec2, InstanceIds=ids)
    assert code(err) == "RequestLimitExceeded"
    ec2.describe_instances(InstanceIds=ids)  # other reads have their own budget
    clock.sleep(1.0)
    assert list(topology(ec2, InstanceIds=ids)) == ids


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        pytest.param(
            {"InstanceIds": ["i-1"], "GroupNames": ["gang"]},
            "InvalidParameterCombination",
            id="ids-and-groups",
        ),
        pytest.param(
            {"InstanceIds": [f"i-{n}" for n in range(101)]}, "InvalidParameterValue", id="101"
        ),
        pytest.param({"GroupNames": ["nope"]}, "InvalidPlacementGroup.Unknown", id="unknown-group"),
    ],
)
def test_its_errors(admin: dict[str, Any], fake: FakeAws, params: Any, expected: str) -> None:
    with pytest.raises(ClientError) as err:
        admin["ec2"].describe_instance_topology(**params)
    assert code(err) == expected


def test_the_cluster_security_group_allows_itself_until_told_not_to(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    sg = admin["eks"].describe_cluster(name=CLUSTER)["cluster"]["resourcesVpcConfig"][
        "clusterSecurityGroupId"
    ]

    def self_rules() -> tuple[bool, bool]:
        group = ec2.describe_security_groups(GroupIds=[sg])["SecurityGroups"][0]

        def allows(rules: list[dict[str, Any]]) -> bool:
            return any(
                r["IpProtocol"] == "-1" and any(p["GroupId"] == sg for p in r["UserIdGroupPairs"])
                for r in rules
            )

        return allows(group["IpPermissions"]), allows(group["IpPermissionsEgress"])

    assert self_rules() == (True, True)
    fake.set_self_rule(sg, allowed=False, region=REGION)
    assert self_rules() == (False, False)
    fake.set_self_rule(sg, allowed=True, region=REGION)
    assert self_rules() == (True, True)

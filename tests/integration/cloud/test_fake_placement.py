"""The layer's placement groups, driven through plain boto3: the API itself, launching
into a group from the request, a launch template or a fleet override, the cluster
group's one AZ, and the per-group capacity the control API sets."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from tests.integration.cloud.conftest import TYPE, live
from tests.integration.cloud.test_fake_layer import AMI, code
from tests.integration.cloud.test_fake_layer import run as launch

Ec2 = Any


def create(ec2: Ec2, name: str = "gang", strategy: str = "cluster", **tags: str) -> dict[str, Any]:
    specs = [
        {
            "ResourceType": "placement-group",
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
        }
    ]
    group: dict[str, Any] = ec2.create_placement_group(
        GroupName=name, Strategy=strategy, **({"TagSpecifications": specs} if tags else {})
    )["PlacementGroup"]
    return group


def group_of(ec2: Ec2, ids: list[str]) -> set[str]:
    found = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return {i["Placement"].get("GroupName", "") for r in found for i in r["Instances"]}


def test_create_describe_and_tag_filters(admin: dict[str, Any], fake: FakeAws) -> None:
    ec2 = admin["ec2"]
    made = create(ec2, "gang-a", owner="us")
    create(ec2, "gang-b", "spread", owner="them")
    assert made["GroupId"].startswith("pg-")
    assert made["State"] == "available"
    assert made["GroupArn"].endswith(":placement-group/gang-a")

    def names(**kwargs: Any) -> list[str]:
        return [g["GroupName"] for g in ec2.describe_placement_groups(**kwargs)["PlacementGroups"]]

    assert names() == ["gang-a", "gang-b"]
    assert names(Filters=[{"Name": "tag:owner", "Values": ["us"]}]) == ["gang-a"]
    assert names(Filters=[{"Name": "strategy", "Values": ["spread"]}]) == ["gang-b"]
    assert names(GroupIds=[made["GroupId"]]) == ["gang-a"]
    tags = ec2.describe_placement_groups(GroupNames=["gang-a"])["PlacementGroups"][0]["Tags"]
    assert tags == [{"Key": "owner", "Value": "us"}]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        pytest.param(lambda ec2: create(ec2, "gang"), "InvalidPlacementGroup.Duplicate", id="dup"),
        pytest.param(
            lambda ec2: ec2.describe_placement_groups(GroupNames=["nope"]),
            "InvalidPlacementGroup.Unknown",
            id="describe-unknown",
        ),
        pytest.param(
            lambda ec2: ec2.delete_placement_group(GroupName="nope"),
            "InvalidPlacementGroup.Unknown",
            id="delete-unknown",
        ),
        pytest.param(
            lambda ec2: create(ec2, "other", "tight"), "InvalidParameterValue", id="strategy"
        ),
        pytest.param(lambda ec2: create(ec2, "x" * 256), "InvalidParameterValue", id="too-long"),
    ],
)
def test_ec2_errors(admin: dict[str, Any], fake: FakeAws, call: Any, expected: str) -> None:
    create(admin["ec2"], "gang")
    with pytest.raises(ClientError) as err:
        call(admin["ec2"])
    assert code(err) == expected


def test_delete_is_refused_while_instances_are_in_it(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    create(ec2, "gang")
    ids = launch(ec2, world, 2, Placement={"GroupName": "gang"})
    fake.set_placement_delete_lag(1)  # a terminated member still holds it once
    with pytest.raises(ClientError) as err:
        ec2.delete_placement_group(GroupName="gang")
    assert code(err) == "InvalidPlacementGroup.InUse"
    ec2.terminate_instances(InstanceIds=ids)
    with pytest.raises(ClientError) as err:
        ec2.delete_placement_group(GroupName="gang")
    assert code(err) == "InvalidPlacementGroup.InUse"
    ec2.delete_placement_group(GroupName="gang")
    assert ec2.describe_placement_groups()["PlacementGroups"] == []


def test_group_name_from_the_request_and_from_a_launch_template(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    group = create(ec2, "gang")
    direct = launch(ec2, world, 2, Placement={"GroupName": "gang"})
    by_id = launch(ec2, world, 1, Placement={"GroupId": group["GroupId"]})
    lt = ec2.create_launch_template(
        LaunchTemplateName="pg-lt",
        LaunchTemplateData={
            "ImageId": AMI,
            "InstanceType": TYPE,
            "Placement": {"GroupName": "gang"},
        },
    )["LaunchTemplate"]["LaunchTemplateId"]
    templated = ec2.run_instances(
        LaunchTemplate={"LaunchTemplateId": lt, "Version": "1"},
        MinCount=2,
        MaxCount=2,
        SubnetId=world.subnets["us-east-1a"],
    )["Instances"]
    assert group_of(ec2, direct + by_id + [i["InstanceId"] for i in templated]) == {"gang"}
    assert group_of(ec2, launch(ec2, world, 1)) == {""}


def test_a_launch_into_an_unknown_group_launches_nothing(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    with pytest.raises(ClientError) as err:
        launch(admin["ec2"], world, 2, Placement={"GroupName": "nope"})
    assert code(err) == "InvalidPlacementGroup.Unknown"
    assert live() == []


def test_a_cluster_group_is_one_zone_while_it_has_members(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    create(ec2, "gang")
    create(ec2, "wide", "spread")
    first = launch(ec2, world, 2, Placement={"GroupName": "gang"})
    with pytest.raises(ClientError) as err:
        launch(ec2, world, 1, zone="us-east-1b", Placement={"GroupName": "gang"})
    assert code(err) == "InvalidPlacementGroup.InUse"
    assert "us-east-1a" in err.value.response["Error"]["Message"]
    launch(ec2, world, 1, zone="us-east-1b", Placement={"GroupName": "wide"})  # spread may
    ec2.terminate_instances(InstanceIds=first)
    assert len(launch(ec2, world, 2, zone="us-east-1b", Placement={"GroupName": "gang"})) == 2


def test_group_capacity_is_all_or_nothing(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    create(ec2, "gang")
    create(ec2, "roomy")
    fake.set_placement_capacity(TYPE, 3, group="gang")
    fake.set_placement_capacity(TYPE, 8)  # every other group
    with pytest.raises(ClientError) as err:
        launch(ec2, world, 4, Placement={"GroupName": "gang"})
    assert code(err) == "InsufficientInstanceCapacity"
    assert live() == []
    assert len(launch(ec2, world, 4, Placement={"GroupName": "roomy"})) == 4
    assert len(launch(ec2, world, 4)) == 4  # outside any group: no such limit
    fake.set_placement_capacity(TYPE, 4, group="gang")
    assert len(launch(ec2, world, 4, Placement={"GroupName": "gang"})) == 4


def fleet(ec2: Ec2, world: World, n: int, override: dict[str, Any], lt_data: Any = None) -> Any:
    lt = ec2.create_launch_template(
        LaunchTemplateName=f"fleet-{len(ec2.describe_launch_templates()['LaunchTemplates'])}",
        LaunchTemplateData=lt_data or {"ImageId": AMI, "InstanceType": TYPE},
    )["LaunchTemplate"]["LaunchTemplateId"]
    return ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "TotalTargetCapacity": n,
            "DefaultTargetCapacityType": "on-demand",
        },
        OnDemandOptions={"MinTargetCapacity": n, "SingleInstanceType": True},
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": lt, "Version": "1"},
                "Overrides": [{"SubnetId": world.subnets["us-east-1a"], **override}],
            }
        ],
    )


def test_fleet_overrides_and_templates_carry_the_group(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    create(ec2, "gang")
    fake.set_placement_capacity(TYPE, 3, group="gang")
    short = fleet(ec2, world, 4, {"Placement": {"GroupName": "gang"}})
    assert short["Instances"] == []
    assert short["Errors"][0]["ErrorCode"] == "InsufficientInstanceCapacity"
    fake.set_placement_capacity(TYPE, 5, group="gang")
    made = fleet(ec2, world, 3, {"Placement": {"GroupName": "gang"}})
    ids = [i for group in made["Instances"] for i in group["InstanceIds"]]
    assert len(ids) == 3
    assert group_of(ec2, ids) == {"gang"}
    data = {"ImageId": AMI, "InstanceType": TYPE, "Placement": {"GroupName": "gang"}}
    over = fleet(ec2, world, 3, {}, lt_data=data)  # 3 + 3 > 5: the template's group counts
    assert over["Instances"] == []
    assert over["Errors"]
    unknown = fleet(ec2, world, 1, {"Placement": {"GroupName": "nope"}})
    assert unknown["Errors"][0]["ErrorCode"] == "InvalidPlacementGroup.Unknown"
    assert len(live()) == 3


def test_one_fleet_does_not_spread_a_cluster_group_over_two_zones(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    create(ec2, "gang")
    fake.set_capacity("us-east-1a", TYPE, 2)  # the first zone holds only half the gang
    lt = ec2.create_launch_template(
        LaunchTemplateName="two-zones", LaunchTemplateData={"ImageId": AMI, "InstanceType": TYPE}
    )["LaunchTemplate"]["LaunchTemplateId"]
    answer = ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "TotalTargetCapacity": 4,
            "DefaultTargetCapacityType": "on-demand",
        },
        OnDemandOptions={"MinTargetCapacity": 4, "SingleInstanceType": True},
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": lt, "Version": "1"},
                "Overrides": [
                    {"SubnetId": world.subnets[z], "Placement": {"GroupName": "gang"}}
                    for z in ("us-east-1a", "us-east-1b")
                ],
            }
        ],
    )
    assert answer["Instances"] == []
    assert "InvalidPlacementGroup.InUse" in {e["ErrorCode"] for e in answer["Errors"]}
    assert live() == []

"""The layer's network interfaces: EFA types and network cards kept on the ENIs, from
the request, a launch template or a fleet, and EC2's refusals with its error codes."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from tests.integration.cloud.conftest import TYPE, live
from tests.integration.cloud.test_fake_layer import AMI, code
from tests.integration.cloud.test_fake_placement import fleet


def efa_layout(cards: int, subnet: str | None = None, **extra: Any) -> list[dict[str, Any]]:
    """AWS's recommended layout: card 0 device 0, then device 1 on each further card."""
    return [
        {
            "NetworkCardIndex": card,
            "DeviceIndex": 0 if card == 0 else 1,
            "InterfaceType": "efa",
            "DeleteOnTermination": True,
            **({"SubnetId": subnet} if subnet else {}),
            **extra,
        }
        for card in range(cards)
    ]


def layout_of(ec2: Any, ids: list[str]) -> dict[str, list[tuple[int, int, str]]]:
    found = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return {
        i["InstanceId"]: sorted(
            (
                n["Attachment"]["NetworkCardIndex"],
                n["Attachment"]["DeviceIndex"],
                n["InterfaceType"],
            )
            for n in i["NetworkInterfaces"]
        )
        for r in found
        for i in r["Instances"]
    }


P4D = [(0, 0, "efa"), (1, 1, "efa"), (2, 1, "efa"), (3, 1, "efa")]


def test_four_efa_interfaces_on_four_cards_and_none_left_after_termination(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    sg = ec2.describe_security_groups()["SecurityGroups"][0]["GroupId"]
    resp = ec2.run_instances(
        ImageId=AMI,
        InstanceType=TYPE,
        MinCount=2,
        MaxCount=2,
        NetworkInterfaces=efa_layout(4, world.subnets["us-east-1b"], Groups=[sg]),
    )
    ids = [i["InstanceId"] for i in resp["Instances"]]
    assert layout_of(ec2, ids) == dict.fromkeys(ids, P4D)
    assert {i.availability_zone for i in live()} == {"us-east-1b"}
    enis = ec2.describe_network_interfaces(
        Filters=[{"Name": "attachment.instance-id", "Values": ids}]
    )
    assert len(enis["NetworkInterfaces"]) == 8
    assert {g["GroupId"] for e in enis["NetworkInterfaces"] for g in e["Groups"]} == {sg}
    ec2.terminate_instances(InstanceIds=ids)
    assert ec2.describe_network_interfaces()["NetworkInterfaces"] == []


def test_interfaces_from_a_launch_template_and_a_fleet(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    data = {"ImageId": AMI, "InstanceType": TYPE, "NetworkInterfaces": efa_layout(4)}
    lt = ec2.create_launch_template(LaunchTemplateName="efa-lt", LaunchTemplateData=data)
    tid = lt["LaunchTemplate"]["LaunchTemplateId"]
    ran = ec2.run_instances(
        LaunchTemplate={"LaunchTemplateId": tid, "Version": "1"},
        MinCount=1,
        MaxCount=1,
        NetworkInterfaces=efa_layout(4, world.subnets["us-east-1c"]),  # replaces the template's
    )["Instances"]
    fleet_ids = [
        i for g in fleet(ec2, world, 2, {}, lt_data=data)["Instances"] for i in g["InstanceIds"]
    ]
    ids = [ran[0]["InstanceId"], *fleet_ids]
    assert len(ids) == 3
    assert layout_of(ec2, ids) == dict.fromkeys(ids, P4D)
    zones = {i.id: i.availability_zone for i in live()}
    assert zones[ran[0]["InstanceId"]] == "us-east-1c"
    assert {zones[i] for i in fleet_ids} == {"us-east-1a"}  # the override's subnet


def bad_requests(world: World) -> dict[str, dict[str, Any]]:
    sub = world.subnets["us-east-1a"]
    two_on_one_card = [*efa_layout(2, sub), {**efa_layout(2, sub)[1], "DeviceIndex": 2}]
    return {
        "top-subnet": {"SubnetId": sub, "NetworkInterfaces": efa_layout(4)},
        "top-groups": {"SecurityGroupIds": ["sg-1"], "NetworkInterfaces": efa_layout(1, sub)},
        "efa-only-primary": {"NetworkInterfaces": efa_layout(1, sub, InterfaceType="efa-only")},
        # i7ie.48xlarge: 2 network cards, 1 EFA
        "too-many-efa": {"NetworkInterfaces": efa_layout(2, sub), "InstanceType": "i7ie.48xlarge"},
        "card-past-the-last": {"NetworkInterfaces": efa_layout(5, sub)},
        "two-efa-one-card": {"NetworkInterfaces": two_on_one_card},
        "slot-twice": {"NetworkInterfaces": [*efa_layout(1, sub), *efa_layout(1, sub)]},
        "no-efa-type": {"NetworkInterfaces": efa_layout(1, sub), "InstanceType": "m5.large"},
    }


EXPECTED = {
    "top-subnet": ("InvalidParameterCombination", "subnet"),
    "top-groups": ("InvalidParameterCombination", "security groups"),
    "efa-only-primary": ("InvalidParameterCombination", "EFA-only"),
    "too-many-efa": ("InvalidParameterValue", "i7ie.48xlarge supports at most 1 EFA"),
    "card-past-the-last": ("InvalidParameterValue", "NetworkCardIndex 4"),
    "two-efa-one-card": ("InvalidParameterValue", "Network card 1 has 2 EFA"),
    "slot-twice": ("InvalidParameterValue", "more than one interface"),
    "no-efa-type": ("InvalidParameterCombination", "m5.large does not support"),
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_ec2_refuses_bad_interfaces(
    admin: dict[str, Any], world: World, fake: FakeAws, case: str
) -> None:
    base = {"ImageId": AMI, "InstanceType": TYPE, "MinCount": 1, "MaxCount": 1}
    with pytest.raises(ClientError) as err:
        admin["ec2"].run_instances(**{**base, **bad_requests(world)[case]})
    wanted, says = EXPECTED[case]
    assert code(err) == wanted
    assert says in err.value.response["Error"]["Message"]
    assert live() == []


def test_refusals_apply_to_a_launch_template_and_a_fleet(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    data = {
        "ImageId": AMI,
        "InstanceType": TYPE,
        "SecurityGroupIds": ["sg-1"],
        "NetworkInterfaces": efa_layout(4),
    }
    lt = ec2.create_launch_template(LaunchTemplateName="bad-lt", LaunchTemplateData=data)
    with pytest.raises(ClientError) as err:
        ec2.run_instances(
            LaunchTemplate={"LaunchTemplateId": lt["LaunchTemplate"]["LaunchTemplateId"]},
            MinCount=1,
            MaxCount=1,
            SubnetId=world.subnets["us-east-1a"],
        )
    assert code(err) == "InvalidParameterCombination"
    answer = fleet(ec2, world, 1, {}, lt_data=data)
    assert answer["Instances"] == []
    assert answer["Errors"][0]["ErrorCode"] == "InvalidParameterCombination"
    assert live() == []


def test_efa_interfaces_need_addresses_for_the_whole_gang(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    subnet = world.subnets["us-east-1a"]
    free = admin["ec2"].describe_subnets(SubnetIds=[subnet])["Subnets"][0][
        "AvailableIpAddressCount"
    ]
    n = free // 4 + 1  # fits as n single-interface instances, not with 4 interfaces each
    with pytest.raises(ClientError) as err:
        admin["ec2"].run_instances(
            ImageId=AMI,
            InstanceType=TYPE,
            MinCount=n,
            MaxCount=n,
            NetworkInterfaces=efa_layout(4, subnet),
        )
    assert code(err) == "InsufficientFreeAddressesInSubnet"
    assert live() == []

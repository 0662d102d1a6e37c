"""The fidelity and fault layer itself, driven through plain boto3."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from cryptography import x509
from moto import mock_aws

from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from tests.integration.cloud.conftest import CLUSTER, TYPE, live
from tests.support.clock import ManualClock

AMI = "ami-12345678"


def run(ec2: Any, world: World, n: int = 1, zone: str = "us-east-1a", **extra: Any) -> list[str]:
    resp = ec2.run_instances(
        ImageId=AMI,
        InstanceType=TYPE,
        MinCount=n,
        MaxCount=n,
        SubnetId=world.subnets[zone],
        **extra,
    )
    return [i["InstanceId"] for i in resp["Instances"]]


def code(err: pytest.ExceptionInfo[ClientError]) -> str:
    return str(err.value.response["Error"]["Code"])


def test_client_token_idempotency(admin: dict[str, Any], world: World) -> None:
    ec2 = admin["ec2"]
    first = run(ec2, world, 2, ClientToken="tok")
    assert run(ec2, world, 2, ClientToken="tok") == first
    with pytest.raises(ClientError) as err:
        run(ec2, world, 3, ClientToken="tok")
    assert code(err) == "IdempotentParameterMismatch"
    other_zone = run(ec2, world, 2, zone="us-east-1b", ClientToken="tok")
    assert set(other_zone).isdisjoint(first)  # idempotency is zonal
    assert len(live()) == 4


def test_capacity_is_all_or_nothing_and_freed_on_terminate(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    fake.set_capacity("us-east-1a", TYPE, 3)
    ids = run(ec2, world, 2)
    with pytest.raises(ClientError) as err:
        run(ec2, world, 2)
    assert code(err) == "InsufficientInstanceCapacity"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert len(live()) == 2
    ec2.terminate_instances(InstanceIds=ids)
    assert len(run(ec2, world, 3)) == 3


def _fleet(ec2: Any, world: World, n: int, minimum: int | None) -> dict[str, Any]:
    lt = ec2.create_launch_template(
        LaunchTemplateName=f"fleet-lt-{n}-{minimum}",
        LaunchTemplateData={"ImageId": AMI, "InstanceType": TYPE},
    )["LaunchTemplate"]["LaunchTemplateId"]
    options = {"SingleInstanceType": True, **({"MinTargetCapacity": minimum} if minimum else {})}
    result: dict[str, Any] = ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "TotalTargetCapacity": n,
            "DefaultTargetCapacityType": "on-demand",
        },
        OnDemandOptions=options,
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": lt, "Version": "1"},
                "Overrides": [{"SubnetId": s} for s in world.subnets.values()],
            }
        ],
    )
    return result


def test_instant_fleet_min_target_capacity(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    for zone in world.subnets:
        fake.set_capacity(zone, TYPE, 1)
    short = _fleet(admin["ec2"], world, 4, minimum=4)
    assert short["Instances"] == []
    assert short["Errors"][0]["ErrorCode"] == "InsufficientInstanceCapacity"
    assert live() == []
    partial = _fleet(admin["ec2"], world, 4, minimum=None)
    assert len(partial["Instances"]) == 3
    assert partial["Errors"]
    assert sorted(i.availability_zone for i in live()) == sorted(world.subnets)


def test_token_bucket_throttling(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    for _ in range(5):
        run(ec2, world)
    with pytest.raises(ClientError) as err:
        run(ec2, world)
    assert code(err) == "RequestLimitExceeded"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    clock.sleep(0.5)  # 2 tokens a second
    run(ec2, world)
    with pytest.raises(ClientError):
        run(ec2, world)
    fake.set_throttling(False)
    run(ec2, world)
    assert len(live()) == 7


def test_rules_match_skip_and_expire(admin: dict[str, Any], world: World, fake: FakeAws) -> None:
    ec2 = admin["ec2"]
    fake.add_rule(
        {
            "action": "RunInstances",
            "code": "Unavailable",
            "status": 503,
            "skip": 1,
            "times": 1,
            "match": {"SubnetId": world.subnets["us-east-1b"]},
        }
    )
    run(ec2, world, zone="us-east-1a")
    run(ec2, world, zone="us-east-1b")  # skipped
    with pytest.raises(ClientError) as err:
        run(ec2, world, zone="us-east-1b")
    assert code(err) == "Unavailable"
    run(ec2, world, zone="us-east-1b")  # spent
    assert [c["outcome"] for c in fake.calls("RunInstances")] == [
        "ok",
        "ok",
        "error:Unavailable",
        "ok",
    ]


def test_lost_response_happens_after_the_side_effect(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    fake.add_rule({"action": "RunInstances", "effect": "lost_response"})
    with pytest.raises(ReadTimeoutError):
        run(admin["ec2"], world, 2, ClientToken="t")
    assert len(live()) == 2
    assert len(run(admin["ec2"], world, 2, ClientToken="t")) == 2
    assert len(live()) == 2


def test_timeout_rule_has_no_side_effect(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    fake.add_rule({"action": "RunInstances", "effect": "timeout"})
    with pytest.raises(ReadTimeoutError):
        run(admin["ec2"], world, 2)
    assert live() == []


def test_instance_profile_on_every_instance(admin: dict[str, Any], world: World) -> None:
    ids = run(admin["ec2"], world, 3, IamInstanceProfile={"Name": world.instance_profile})
    found = admin["ec2"].describe_iam_instance_profile_associations(
        Filters=[{"Name": "instance-id", "Values": ids}]
    )["IamInstanceProfileAssociations"]
    assert sorted(a["InstanceId"] for a in found) == sorted(ids)


def test_attached_eni_cannot_be_deleted(admin: dict[str, Any], world: World) -> None:
    ec2 = admin["ec2"]
    (iid,) = run(ec2, world)
    eni = ec2.create_network_interface(SubnetId=world.subnets["us-east-1a"])["NetworkInterface"]
    ec2.attach_network_interface(
        NetworkInterfaceId=eni["NetworkInterfaceId"], InstanceId=iid, DeviceIndex=1
    )
    with pytest.raises(ClientError) as err:
        ec2.delete_network_interface(NetworkInterfaceId=eni["NetworkInterfaceId"])
    assert code(err) == "InvalidNetworkInterface.InUse"


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
@pytest.mark.parametrize("variant", ["standard", "nvidia", "neuron"])
def test_eks_optimized_ami_parameters(admin: dict[str, Any], arch: str, variant: str) -> None:
    name = (
        f"/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/{arch}/{variant}"
        "/recommended/image_id"
    )
    value = admin["ssm"].get_parameter(Name=name)["Parameter"]["Value"]
    assert re.fullmatch(r"ami-[0-9a-f]{17}", value)
    with pytest.raises(ClientError) as err:
        admin["ssm"].get_parameter(Name=name.replace("recommended", "nope"))
    assert code(err) == "ParameterNotFound"


def test_describe_cluster_looks_like_eks(admin: dict[str, Any], world: World) -> None:
    cluster = admin["eks"].describe_cluster(name=CLUSTER)["cluster"]
    assert re.fullmatch(
        r"https://[0-9A-F]{32}\.gr7\.us-east-1\.eks\.amazonaws\.com", cluster["endpoint"]
    )
    cert = x509.load_pem_x509_certificate(base64.b64decode(cluster["certificateAuthority"]["data"]))
    assert cert.subject.rfc4514_string() == "CN=kubernetes"
    sg = cluster["resourcesVpcConfig"]["clusterSecurityGroupId"]
    groups = admin["ec2"].describe_security_groups(GroupIds=[sg])["SecurityGroups"]
    assert groups[0]["VpcId"] == world.vpc_id


def test_delete_launch_template_versions(admin: dict[str, Any], world: World) -> None:
    ec2 = admin["ec2"]
    lt = ec2.create_launch_template(LaunchTemplateName="v-lt", LaunchTemplateData={"ImageId": AMI})
    tid = lt["LaunchTemplate"]["LaunchTemplateId"]
    ec2.create_launch_template_version(LaunchTemplateId=tid, LaunchTemplateData={"ImageId": AMI})
    out = ec2.delete_launch_template_versions(LaunchTemplateId=tid, Versions=["1", "2"])
    assert [v["VersionNumber"] for v in out["SuccessfullyDeletedLaunchTemplateVersions"]] == [2]
    (bad,) = out["UnsuccessfullyDeletedLaunchTemplateVersions"]
    assert bad["ResponseError"]["Code"] == "launchTemplateVersionIsDefault"
    left = ec2.describe_launch_template_versions(LaunchTemplateId=tid)["LaunchTemplateVersions"]
    assert [v["VersionNumber"] for v in left] == [1]
    with pytest.raises(ClientError):
        run(ec2, world, LaunchTemplate={"LaunchTemplateId": tid, "Version": "2"})


def test_describe_capacity_reservations(admin: dict[str, Any], world: World, fake: FakeAws) -> None:
    fake.add_reservation(
        "cr-1", zone="us-east-1a", instance_type=TYPE, count=4, kind="capacity-block"
    )
    (cr,) = admin["ec2"].describe_capacity_reservations(CapacityReservationIds=["cr-1"])[
        "CapacityReservations"
    ]
    assert cr["ReservationType"] == "capacity-block"
    assert cr["AvailableInstanceCount"] == 4
    with pytest.raises(ClientError) as err:
        admin["ec2"].describe_capacity_reservations(CapacityReservationIds=["cr-2"])
    assert code(err) == "InvalidCapacityReservationId.NotFound"


def test_without_an_active_layer_moto_is_untouched(admin_clients: dict[str, Any]) -> None:
    with mock_aws():
        ec2 = admin_clients["ec2"]
        ec2.run_instances(ImageId=AMI, MinCount=1, MaxCount=1, ClientToken="same")
        ec2.run_instances(ImageId=AMI, MinCount=1, MaxCount=1, ClientToken="same")
        assert len(live()) == 2


def test_a_subnet_without_enough_addresses_launches_nothing(
    admin: dict[str, Any], world: World
) -> None:
    ec2 = admin["ec2"]
    small = ec2.create_subnet(
        VpcId=world.vpc_id, CidrBlock="10.0.9.0/28", AvailabilityZone="us-east-1a"
    )
    with pytest.raises(ClientError) as err:
        ec2.run_instances(
            ImageId=AMI, MinCount=12, MaxCount=12, SubnetId=small["Subnet"]["SubnetId"]
        )
    assert code(err) == "InsufficientFreeAddressesInSubnet"
    assert live() == []

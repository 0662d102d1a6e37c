"""What each launch carries: template, AMI, profile, IMDSv2, user data, tags, reservations."""

from __future__ import annotations

import base64
import email
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import yaml
from moto.ssm.models import ssm_backends

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.eks_ssm import fake_ami
from atomic_gang_fakeaws.world import World, seed_backends
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    PermanentFailure,
    Shortfall,
    naming,
)
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from tests.integration.cloud.conftest import CLUSTER, TYPE, backend, pool_instances, tags_of

Spec = Callable[..., GangSpec]
AMI_PATH = (
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
)


def _template(admin: dict[str, Any]) -> dict[str, Any]:
    (lt,) = admin["ec2"].describe_launch_templates()["LaunchTemplates"]
    versions = admin["ec2"].describe_launch_template_versions(
        LaunchTemplateId=lt["LaunchTemplateId"], Versions=["$Default"]
    )["LaunchTemplateVersions"]
    data: dict[str, Any] = versions[0]["LaunchTemplateData"]
    return {"template": lt, "data": data}


def test_template_per_shape_with_ssm_ami_profile_sg_and_imdsv2(
    provider: Ec2Provider, make_spec: Spec, admin: dict[str, Any], world: World
) -> None:
    spec = make_spec()
    assert isinstance(provider.acquire(AcquireRequest(spec=spec, generation=0)), Launched)
    found = _template(admin)
    data = found["data"]
    assert found["template"]["LaunchTemplateName"].startswith(f"atomic-gang-{CLUSTER}-shape-")
    assert data["ImageId"] == fake_ami(AMI_PATH)
    assert data["IamInstanceProfile"] == {"Name": world.instance_profile}
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    cluster_sg = admin["eks"].describe_cluster(name=CLUSTER)["cluster"]["resourcesVpcConfig"][
        "clusterSecurityGroupId"
    ]
    assert data["SecurityGroupIds"] == [cluster_sg]
    lt_tags = {t["Key"]: t["Value"] for t in found["template"].get("Tags", [])}
    assert lt_tags["atomic-gang.k8s.aws/managed"] == "true"
    assert "atomic-gang.k8s.aws/pool" not in lt_tags  # shared by every pool of the shape


def test_a_new_pool_of_a_known_shape_costs_no_template_call_and_keeps_its_labels(
    provider: Ec2Provider, make_spec: Spec, admin: dict[str, Any], fake: FakeAws
) -> None:
    first = provider.acquire(AcquireRequest(spec=make_spec(pool="first"), generation=0))
    assert isinstance(first, Launched)
    fake.clear_calls()
    second = provider.acquire(AcquireRequest(spec=make_spec(pool="second"), generation=3))
    assert isinstance(second, Launched)
    assert [c for c in fake.calls() if "LaunchTemplate" in c["action"]] == []
    assert len(admin["ec2"].describe_launch_templates()["LaunchTemplates"]) == 1
    flags = node_config(admin, second.instance_ids[0])["spec"]["kubelet"]["flags"]
    labels = dict(kv.split("=", 1) for kv in flag(flags, "--node-labels").split(","))
    assert labels["atomic-gang.k8s.aws/pool"] == "second"
    assert labels["atomic-gang.k8s.aws/generation"] == "3"


def test_explicit_ami_wins_over_ssm(
    provider: Ec2Provider, make_spec: Spec, admin: dict[str, Any], fake: FakeAws
) -> None:
    spec = make_spec(ami_id="ami-0123456789abcdef0")
    assert isinstance(provider.acquire(AcquireRequest(spec=spec, generation=0)), Launched)
    assert _template(admin)["data"]["ImageId"] == "ami-0123456789abcdef0"
    assert fake.calls("GetParameter") == []


def node_config(admin: dict[str, Any], instance_id: str) -> dict[str, Any]:
    """The nodeadm NodeConfig inside an instance's MIME multipart user data."""
    raw = admin["ec2"].describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    message = email.message_from_bytes(base64.b64decode(raw["UserData"]["Value"]))
    assert message.is_multipart()
    (part,) = [p for p in message.walk() if p.get_content_type() == "application/node.eks.aws"]
    doc: dict[str, Any] = yaml.safe_load(str(part.get_payload()))
    assert doc["kind"] == "NodeConfig"
    return doc


def flag(flags: list[str], name: str) -> str:
    (value,) = [f.removeprefix(name + "=") for f in flags if f.startswith(name + "=")]
    return value


@pytest.mark.parametrize("mode", ["runinstances", "fleet"])
def test_every_instance_gets_profile_tags_and_user_data(
    provider: Ec2Provider, make_spec: Spec, admin: dict[str, Any], world: World, mode: str
) -> None:
    spec = make_spec(count=2, mode=mode)
    result = provider.acquire(AcquireRequest(spec=spec, generation=7))
    assert isinstance(result, Launched)
    described = admin["ec2"].describe_instances(InstanceIds=list(result.instance_ids))
    instances = [i for r in described["Reservations"] for i in r["Instances"]]
    assert len(instances) == 2
    want_tags = naming.group_tags(cluster=CLUSTER, spec=spec, generation=7)
    assert {"atomic-gang.k8s.aws/managed", "atomic-gang.k8s.aws/group"} <= set(want_tags)
    cluster = admin["eks"].describe_cluster(name=CLUSTER)["cluster"]
    for inst in instances:
        assert inst["IamInstanceProfile"]["Arn"].endswith("/" + world.instance_profile)
        assert inst["MetadataOptions"]["HttpTokens"] == "required"
        volume = inst["BlockDeviceMappings"][0]["Ebs"]["VolumeId"]
        eni = inst["NetworkInterfaces"][0]["NetworkInterfaceId"]
        for resource in (inst["InstanceId"], volume, eni):
            assert want_tags.items() <= tags_of(resource).items(), resource
        doc = node_config(admin, inst["InstanceId"])["spec"]
        assert doc["cluster"] == {
            "name": CLUSTER,
            "apiServerEndpoint": cluster["endpoint"],
            "certificateAuthority": cluster["certificateAuthority"]["data"],
            "cidr": cluster["kubernetesNetworkConfig"]["serviceIpv4Cidr"],
        }
        flags = doc["kubelet"]["flags"]
        labels = dict(kv.split("=", 1) for kv in flag(flags, "--node-labels").split(","))
        assert labels == naming.node_labels(spec=spec, generation=7)
        assert labels["atomic-gang.k8s.aws/managed"] == "true"
        assert flag(flags, "--register-with-taints") == "atomic-gang.k8s.aws/gang=train:NoExecute"


def test_a_new_ami_makes_a_new_default_and_deletes_old_versions(
    make_provider: Callable[..., Ec2Provider], make_spec: Spec, admin: dict[str, Any], fake: FakeAws
) -> None:
    spec = make_spec(count=1)
    assert isinstance(make_provider().acquire(AcquireRequest(spec=spec, generation=0)), Launched)
    ssm_backends["123456789012"]["us-east-1"]._parameters[AMI_PATH][
        -1
    ].value = "ami-00000000000000001"
    assert isinstance(make_provider().acquire(AcquireRequest(spec=spec, generation=1)), Launched)
    (template,) = backend().launch_templates.values()
    assert template.default_version_number == 2
    assert template.get_version(2).data["ImageId"] == "ami-00000000000000001"
    (deleted,) = fake.calls("DeleteLaunchTemplateVersions")
    assert deleted["params"]["LaunchTemplateVersion.1"] == "1"
    assert _template(admin)["data"]["ImageId"] == "ami-00000000000000001"


def test_odcr_targeting(provider: Ec2Provider, make_spec: Spec, fake: FakeAws) -> None:
    fake.add_reservation("cr-0123456789abcdef0", zone="us-east-1b", instance_type=TYPE, count=2)
    spec = make_spec(count=2, capacity_reservation_id="cr-0123456789abcdef0")
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched)
    (run,) = fake.calls("RunInstances")
    p = run["params"]
    assert p["CapacityReservationSpecification.CapacityReservationPreference"] == (
        "capacity-reservations-only"
    )
    assert p[
        "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"
    ] == ("cr-0123456789abcdef0")
    assert "InstanceMarketOptions.MarketType" not in p
    assert {i.availability_zone for i in result.instances} == {"us-east-1b"}
    # The reservation is now full: the next gang into it is a shortfall, read, not launched.
    other = make_spec(pool="other", count=1, capacity_reservation_id="cr-0123456789abcdef0")
    short = provider.acquire(AcquireRequest(spec=other, generation=0))
    assert isinstance(short, Shortfall)
    assert short.attempts[0].code == "ReservationCapacityShort"
    assert "0/2 available" in short.attempts[0].message
    assert len(fake.calls("RunInstances")) == 1


def test_capacity_block_adds_its_market_type(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.add_reservation(
        "cr-0000000000000000b",
        zone="us-east-1a",
        instance_type=TYPE,
        count=4,
        kind="capacity-block",
    )
    spec = make_spec(count=4, capacity_reservation_id="cr-0000000000000000b")
    assert isinstance(provider.acquire(AcquireRequest(spec=spec, generation=0)), Launched)
    (run,) = fake.calls("RunInstances")
    assert run["params"]["InstanceMarketOptions.MarketType"] == "capacity-block"
    assert len(fake.calls("DescribeCapacityReservations")) == 1


def test_missing_or_wrong_instance_profile_is_permanent(
    provider: Ec2Provider, make_spec: Spec, admin: dict[str, Any], world: World
) -> None:
    iam = admin["iam"]
    iam.remove_role_from_instance_profile(
        InstanceProfileName=world.instance_profile, RoleName="eks-gang-node-role"
    )
    result = provider.acquire(AcquireRequest(spec=make_spec(), generation=0))
    assert isinstance(result, PermanentFailure)
    assert result.code == "InstanceProfileRoleMismatch"
    assert "holds no role" in result.message
    iam.delete_instance_profile(InstanceProfileName=world.instance_profile)
    other = make_spec(pool="b", node_role_arn=world.node_role_arn.replace("eks-gang", "other"))
    missing = provider.acquire(AcquireRequest(spec=other, generation=0))
    assert isinstance(missing, PermanentFailure)
    assert missing.code == "InstanceProfileNotFound"
    assert "instance profile" in missing.hint
    assert pool_instances("train") == []


def test_capacity_block_through_a_fleet(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, admin: dict[str, Any]
) -> None:
    fake.add_reservation(
        "cr-0000000000000000c",
        zone="us-east-1c",
        instance_type=TYPE,
        count=2,
        kind="capacity-block",
    )
    spec = make_spec(mode="fleet", count=2, capacity_reservation_id="cr-0000000000000000c")
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched)
    assert {i.availability_zone for i in result.instances} == {"us-east-1c"}
    (fleet,) = fake.calls("CreateFleet")
    p = fleet["params"]
    assert p["TargetCapacitySpecification.DefaultTargetCapacityType"] == "capacity-block"
    assert sum(1 for k in p if k.endswith(".SubnetId")) == 1
    (cr,) = admin["ec2"].describe_capacity_reservations(
        CapacityReservationIds=["cr-0000000000000000c"]
    )["CapacityReservations"]
    assert cr["AvailableInstanceCount"] == 0


def test_reservation_outside_the_pools_zones_is_permanent(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.add_reservation("cr-0000000000000000d", zone="us-east-1c", instance_type=TYPE, count=2)
    spec = make_spec(
        availability_zones=("us-east-1a",), capacity_reservation_id="cr-0000000000000000d"
    )
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, PermanentFailure)
    assert result.code == "CapacityReservationMismatch"
    assert "us-east-1c" in result.message
    assert fake.calls("RunInstances") == []


TEMPLATE_CALLS = ("CreateLaunchTemplate", "DescribeLaunchTemplates", "CreateLaunchTemplateVersion")


def template_calls(fake: FakeAws) -> list[tuple[str, str]]:
    return [(c["action"], c["outcome"]) for c in fake.calls() if c["action"] in TEMPLATE_CALLS]


def test_a_new_shape_costs_one_template_call_and_a_restart_reuses_it(
    make_provider: Callable[..., Ec2Provider], make_spec: Spec, fake: FakeAws
) -> None:
    spec = make_spec(count=1)
    assert isinstance(make_provider().acquire(AcquireRequest(spec=spec, generation=0)), Launched)
    assert template_calls(fake) == [("CreateLaunchTemplate", "ok")]
    fake.clear_calls()
    # A restarted controller: the name is taken, so it reads the template back and,
    # the data being the same, neither creates a version nor changes the default.
    assert isinstance(make_provider().acquire(AcquireRequest(spec=spec, generation=1)), Launched)
    assert template_calls(fake) == [
        ("CreateLaunchTemplate", "error:InvalidLaunchTemplateName.AlreadyExistsException"),
        ("DescribeLaunchTemplates", "ok"),
    ]
    assert fake.calls("ModifyLaunchTemplate") == []
    (template,) = backend().launch_templates.values()
    assert template.default_version_number == 1


def test_new_pools_of_one_new_shape_acquiring_together_make_one_template(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    with ThreadPoolExecutor(4) as pool:
        results = list(
            pool.map(
                lambda n: provider.acquire(
                    AcquireRequest(spec=make_spec(pool=f"p{n}", count=1), generation=0)
                ),
                range(4),
            )
        )
    assert all(isinstance(r, Launched) for r in results)
    assert template_calls(fake) == [("CreateLaunchTemplate", "ok")]


def test_a_shared_template_unused_for_an_hour_is_pruned_and_made_again_when_needed(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, admin: dict[str, Any], clock: Any
) -> None:
    """A shape no pool uses any more leaves no template behind; the pools' own (fleet)
    templates are not the reaper's, and one in use is kept."""
    old = make_spec(pool="old", count=1, instance_type="p4de.24xlarge")
    kept = make_spec(pool="kept", count=1)
    fleet = make_spec(pool="fleet", count=1, mode="fleet", availability_zones=("us-east-1a",))
    for n, spec in enumerate((old, kept, fleet)):
        assert isinstance(provider.acquire(AcquireRequest(spec=spec, generation=n)), Launched)
    names = sorted(
        t["LaunchTemplateName"] for t in admin["ec2"].describe_launch_templates()["LaunchTemplates"]
    )
    assert len(names) == 3
    clock.sleep(1800)
    assert provider.prune_templates() == ()  # used half an hour ago: kept
    assert isinstance(provider.acquire(AcquireRequest(spec=kept, generation=5)), Launched)
    clock.sleep(1801)
    (gone,) = provider.prune_templates()
    left = {
        t["LaunchTemplateName"] for t in admin["ec2"].describe_launch_templates()["LaunchTemplates"]
    }
    assert gone not in left
    assert len(left) == 2  # the shape still in use, and the fleet pool's own
    fake.clear_calls()
    assert isinstance(provider.acquire(AcquireRequest(spec=old, generation=9)), Launched)
    assert template_calls(fake) == [("CreateLaunchTemplate", "ok")]


@pytest.mark.parametrize("cluster", ["my_cluster", "My_Cluster-" + "x" * 89])
def test_a_launch_for_any_eks_cluster_name_keeps_each_name_within_its_limits(
    fake: FakeAws, make_provider: Callable[..., Ec2Provider], make_spec: Callable[..., GangSpec],
    cluster: str,
) -> None:  # fmt: skip
    """EKS names may carry '_' and run to 100 characters: the template and profile names
    and the tags still fit EC2's rules, and the set launches in one call."""
    world = seed_backends(region="us-east-1", cluster=cluster, role_name=f"role-{len(cluster)}")
    engine = make_provider(cluster=cluster)
    spec = make_spec(pool="p" * 63, count=2, node_role_arn=world.node_role_arn)
    launched = engine.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(launched, Launched), launched
    (template,) = [lt for lt in backend().launch_templates.values() if cluster in lt.name]
    assert len(template.name) <= 128
    assert len(world.instance_profile) <= 128
    for instance_id in launched.instance_ids:
        tags = tags_of(instance_id)
        assert tags["atomic-gang.k8s.aws/cluster"] == cluster
        assert tags[f"kubernetes.io/cluster/{cluster}"] == "owned"
        assert all(len(k) <= 128 and len(v) <= 256 for k, v in tags.items())
    assert [c["outcome"] for c in fake.calls("RunInstances")] == ["ok"]

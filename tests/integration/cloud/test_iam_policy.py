"""The engine's whole lifecycle under docs/iam/controller-policy.json, moto IAM on.

Every call must be allowed; anything outside the policy comes back denied and
fails the lifecycle. What moto enforces (and what the layer adds) is pinned
down by the last tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from botocore.exceptions import ClientError
from moto.core import set_initial_no_auth_action_count
from moto.iam.access_control import IAMPolicy, PermissionResult
from moto.ssm.models import ssm_backends

from atomic_gang import GangSpec, keys
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import TRUST, World
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    PermanentFailure,
    ReleaseRequest,
)
from atomic_gang_provisioner.cloud.aws import Ec2Provider, make_clients
from tests.integration.cloud.conftest import CLUSTER, REGION, TYPE, backend, live

POLICY = Path(__file__).parents[3] / "docs" / "iam" / "controller-policy.json"
EXAMPLE_CLUSTER = "my-eks-cluster"  # the policy's example, replaced as docs/iam/README.md says
SELF_MANAGED = POLICY.with_name("self-managed-instance-profile.json")
DENIED = ("AccessDenied", "UnauthorizedOperation", "AccessDeniedException")
T = TypeVar("T")
Spec = Callable[..., GangSpec]


def enforced(fn: Callable[[], T]) -> T:
    """Run ``fn`` with moto checking every request against IAM from the first one."""
    result: T = set_initial_no_auth_action_count(0)(fn)()
    return result


class Keyed:
    """A session whose clients sign with the controller's access key."""

    def __init__(self, session: Any, key: dict[str, str]) -> None:
        self._session, self._key = session, key

    def client(self, name: str, **kwargs: Any) -> Any:
        return self._session.client(
            name,
            aws_access_key_id=self._key["AccessKeyId"],
            aws_secret_access_key=self._key["SecretAccessKey"],
            **kwargs,
        )


Controller = Callable[..., tuple[Ec2Provider, Keyed]]


@pytest.fixture
def make_controller(
    admin: dict[str, Any], session: Any, world: World, make_provider: Callable[..., Ec2Provider]
) -> Controller:
    """An engine signing as a user that holds exactly the given policy files."""

    def build(*policies: Path, **engine: Any) -> tuple[Ec2Provider, Keyed]:
        iam = admin["iam"]
        iam.create_user(UserName="atomic-gang-controller")
        for n, path in enumerate(policies):
            iam.put_user_policy(
                UserName="atomic-gang-controller",
                PolicyName=f"controller-{n}",
                PolicyDocument=path.read_text().replace(EXAMPLE_CLUSTER, CLUSTER),
            )
        key = iam.create_access_key(UserName="atomic-gang-controller")["AccessKey"]
        keyed = Keyed(session, key)
        clients = make_clients(region=REGION, session=keyed)
        return make_provider(clients=clients, **engine), keyed

    return build


@pytest.fixture
def controller(make_controller: Controller) -> tuple[Ec2Provider, Keyed]:
    return make_controller(POLICY)


def denied_calls(fake: FakeAws) -> list[dict[str, Any]]:
    return [c for c in fake.calls() if any(d in c["outcome"] for d in DENIED)]


def cni_tags(instance_id: str, cluster: str = CLUSTER) -> dict[str, str]:
    """The tags EKS's VPC CNI puts on each ENI it creates for a node."""
    return {
        "cluster.k8s.amazonaws.com/name": cluster,
        "node.k8s.amazonaws.com/instance_id": instance_id,
    }


def attach_cni_eni(world: World, instance_id: str) -> str:
    """What the VPC CNI does on the node (straight into moto: no API call, no auth)."""
    ec2 = backend()
    subnet = ec2.get_subnet(world.subnets["us-east-1a"])
    eni = ec2.create_network_interface(
        subnet, None, description=f"aws-K8S-{instance_id}", tags=cni_tags(instance_id)
    )
    ec2.attach_network_interface(eni.id, instance_id, 1)
    return str(eni.id)


def error_codes(probes: dict[str, Callable[[], Any]]) -> dict[str, str]:
    """Each probe must fail; the AWS error code it failed with, by name."""
    out = {}
    for name, probe in probes.items():
        with pytest.raises(ClientError) as err:
            probe()
        out[name] = str(err.value.response["Error"]["Code"])
    return out


def test_whole_lifecycle_is_allowed(
    controller: tuple[Ec2Provider, Keyed], make_spec: Spec, fake: FakeAws, world: World
) -> None:
    engine, _ = controller
    fake.add_reservation("cr-0123456789abcdef0", zone="us-east-1b", instance_type=TYPE, count=2)

    def lifecycle() -> None:
        runs = engine.acquire(AcquireRequest(spec=make_spec(pool="p1", count=2), generation=0))
        fleet = engine.acquire(
            AcquireRequest(spec=make_spec(pool="f1", mode="fleet"), generation=0)
        )
        odcr = make_spec(pool="r1", count=2, capacity_reservation_id="cr-0123456789abcdef0")
        reserved = engine.acquire(AcquireRequest(spec=odcr, generation=0))
        for result in (runs, fleet, reserved):
            assert isinstance(result, Launched), result
        assert isinstance(runs, Launched)
        assert isinstance(fleet, Launched)
        engine.tag(runs.instance_ids, {keys.KEEP_WARM_UNTIL: "2030-01-01T00:00:00Z"})
        eni = attach_cni_eni(world, runs.instance_ids[0])
        released = engine.release(ReleaseRequest(instance_ids=runs.instance_ids))
        assert released.done, released
        assert released.deleted_enis == (eni,)
        gone = engine.release(
            ReleaseRequest(instance_ids=fleet.instance_ids, fleet_ids=(fleet.fleet_id or "",))
        )
        assert gone.done, gone
        leftovers = [i.instance_id for i in engine.list_owned()]
        swept = engine.release(ReleaseRequest(instance_ids=tuple(leftovers)))  # the reaper's
        assert sorted(swept.terminated) == sorted(leftovers)
        for pool in ("p1", "f1", "r1"):
            engine.forget_pool(pool)

    enforced(lifecycle)
    assert denied_calls(fake) == []
    assert live() == []
    # Pools' own templates are gone; the runinstances shapes' shared one stays for the next pool.
    left = [lt.name for lt in backend().launch_templates.values()]
    assert len(left) == 1
    assert "-shape-" in left[0]
    actions = {c["action"] for c in fake.calls()}
    assert {
        "RunInstances",
        "CreateFleet",
        "DeleteNetworkInterface",
        "DeleteLaunchTemplate",
    } <= actions


def test_capacity_blocks_and_reservation_lists_are_allowed(
    controller: tuple[Ec2Provider, Keyed], make_spec: Spec, fake: FakeAws
) -> None:
    """Issue 17's calls: one batched describe (an unknown id halves the batch), a
    block launched by RunInstances and by an instant fleet, the next listed one tried."""
    engine, _ = controller
    for rid, zone in (
        ("cr-0000000000000blk1", "us-east-1a"),
        ("cr-0000000000000blk2", "us-east-1b"),
    ):
        fake.add_reservation(rid, zone=zone, instance_type=TYPE, count=2, kind="capacity-block")

    def blocks() -> None:
        listed = "cr-0000000000000none,cr-0000000000000blk1"
        runs = make_spec(pool="b1", count=2, capacity_reservation_id=listed)
        fleet = make_spec(
            pool="b2", mode="fleet", count=2, capacity_reservation_id="cr-0000000000000blk2"
        )
        # The first launch describes the other pool's block along with its own two.
        along = ("cr-0000000000000blk2",)
        for spec, also in ((runs, along), (fleet, ())):
            done = engine.acquire(AcquireRequest(spec=spec, generation=0, also_reservations=also))
            assert isinstance(done, Launched)
            if spec is runs:
                assert done.reservation is not None
                assert done.reservation.reservation_id == "cr-0000000000000blk1"
            # the drain: the pool releases a block's set itself, before EC2 does
            assert engine.release(ReleaseRequest(instance_ids=done.instance_ids)).done

    enforced(blocks)
    assert denied_calls(fake) == []
    assert {
        "DescribeCapacityReservations",
        "RunInstances",
        "CreateFleet",
        "TerminateInstances",
    } <= {c["action"] for c in fake.calls()}
    (run,) = [c for c in fake.calls("RunInstances") if c["outcome"] == "ok"]
    assert keys.RELEASE_BY_TAG in run["params"].values()  # the reaper's cap, tagged at launch


def test_launch_template_update_is_allowed(
    controller: tuple[Ec2Provider, Keyed], make_spec: Spec, fake: FakeAws
) -> None:
    engine, _ = controller

    def two_amis() -> None:
        assert isinstance(engine.acquire(AcquireRequest(spec=make_spec(), generation=0)), Launched)
        params = ssm_backends["123456789012"][REGION]._parameters
        (name,) = [n for n in params if "/eks/optimized-ami/" in n]
        params[name][-1].value = "ami-00000000000000002"
        engine._resolver._cache.clear()
        assert isinstance(engine.acquire(AcquireRequest(spec=make_spec(), generation=1)), Launched)

    enforced(two_amis)
    assert denied_calls(fake) == []
    assert {"ModifyLaunchTemplate", "DeleteLaunchTemplateVersions"} <= {
        c["action"] for c in fake.calls()
    }


def test_calls_outside_the_policy_are_denied(
    controller: tuple[Ec2Provider, Keyed], world: World, fake: FakeAws
) -> None:
    _, keyed = controller
    ec2 = keyed.client("ec2", region_name=REGION)
    unmanaged = backend().run_instances("ami-12345678", 1, None, [], is_instance_type_default=True)
    unmanaged_id = unmanaged.instances[0].id

    def attempts() -> dict[str, str]:
        probes: dict[str, Callable[[], Any]] = {
            "not-in-policy": lambda: ec2.create_vpc(CidrBlock="10.9.0.0/16"),
            "launch-without-managed-tag": lambda: ec2.run_instances(
                ImageId="ami-12345678", MinCount=1, MaxCount=1, SubnetId=world.subnets["us-east-1a"]
            ),
            "terminate-unmanaged": lambda: ec2.terminate_instances(InstanceIds=[unmanaged_id]),
        }
        return error_codes(probes)

    codes = enforced(attempts)
    assert set(codes) == {"not-in-policy", "launch-without-managed-tag", "terminate-unmanaged"}
    assert all(code in DENIED for code in codes.values()), codes
    assert [i.id for i in live()] == [unmanaged_id]


def test_passing_a_role_outside_the_policy_is_denied(
    controller: tuple[Ec2Provider, Keyed], admin: dict[str, Any], make_spec: Spec, fake: FakeAws
) -> None:
    engine, _ = controller
    iam = admin["iam"]
    other = iam.create_role(RoleName="other-node-role", AssumeRolePolicyDocument=TRUST)["Role"]
    profile = "atomic-gang-instance-profile-demo-other-node-role"
    iam.create_instance_profile(InstanceProfileName=profile)
    iam.add_role_to_instance_profile(InstanceProfileName=profile, RoleName="other-node-role")
    # The cluster would let it join: only the controller's own PassRole scope stops it.
    admin["eks"].create_access_entry(
        clusterName="demo", principalArn=other["Arn"], type="EC2_LINUX"
    )
    spec = make_spec(pool="p2", node_role_arn=other["Arn"])
    result = enforced(lambda: engine.acquire(AcquireRequest(spec=spec, generation=0)))
    assert isinstance(result, PermanentFailure)
    assert result.code in DENIED
    assert "iam:PassRole" in result.message
    assert live() == []


def _drop_profile(admin: dict[str, Any], world: World) -> None:
    iam = admin["iam"]
    name = world.instance_profile
    iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName="eks-gang-node-role")
    iam.delete_instance_profile(InstanceProfileName=name)


def test_self_managed_instance_profile_is_allowed_by_its_statement(
    make_controller: Controller, admin: dict[str, Any], make_spec: Spec, fake: FakeAws, world: World
) -> None:
    _drop_profile(admin, world)
    admin["iam"].create_role(RoleName="admin-role", AssumeRolePolicyDocument=TRUST)
    admin["iam"].create_instance_profile(InstanceProfileName="atomic-gang-instance-profile-x")
    engine, keyed = make_controller(POLICY, SELF_MANAGED, self_manage_instance_profile=True)
    iam = keyed.client("iam")

    def create_then_stray() -> list[str]:
        result = engine.acquire(AcquireRequest(spec=make_spec(count=2), generation=0))
        assert isinstance(result, Launched), result
        codes = []
        with pytest.raises(ClientError) as err:  # the statement is scoped to our prefix
            iam.create_instance_profile(InstanceProfileName="someone-elses-profile")
        codes.append(str(err.value.response["Error"]["Code"]))
        with pytest.raises(ClientError) as err:  # iam:PassRole covers the node role only
            iam.add_role_to_instance_profile(
                InstanceProfileName="atomic-gang-instance-profile-x", RoleName="admin-role"
            )
        codes.append(str(err.value.response["Error"]["Code"]))
        return codes

    assert all(code in DENIED for code in enforced(create_then_stray))
    assert [c["action"] for c in denied_calls(fake)] == [
        "CreateInstanceProfile",
        "AddRoleToInstanceProfile",
    ]
    assert {"CreateInstanceProfile", "AddRoleToInstanceProfile"} <= {
        c["action"] for c in fake.calls() if c["outcome"] == "ok"
    }
    prof = admin["iam"].get_instance_profile(InstanceProfileName=world.instance_profile)
    assert [r["Arn"] for r in prof["InstanceProfile"]["Roles"]] == [world.node_role_arn]


def test_self_managing_without_its_statement_is_denied(
    make_controller: Controller, admin: dict[str, Any], make_spec: Spec, world: World
) -> None:
    _drop_profile(admin, world)
    engine, _ = make_controller(POLICY, self_manage_instance_profile=True)
    result = enforced(lambda: engine.acquire(AcquireRequest(spec=make_spec(), generation=0)))
    assert isinstance(result, PermanentFailure)
    assert result.code in DENIED
    assert "iam:CreateInstanceProfile" in result.message
    assert live() == []


def _instance(admin: dict[str, Any], world: World, tags: dict[str, str]) -> str:
    """An instance set up outside the policy (the admin's call), tagged ``tags``."""
    specs = [
        {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
    ]
    return str(
        admin["ec2"].run_instances(
            ImageId="ami-12345678", MinCount=1, MaxCount=1,
            SubnetId=world.subnets["us-east-1a"], TagSpecifications=specs,
        )["Instances"][0]["InstanceId"]
    )  # fmt: skip


OURS = {keys.MANAGED: "true", keys.CLUSTER: CLUSTER}


def test_tags_reach_only_our_clusters_resources_and_never_move_ownership(
    controller: tuple[Ec2Provider, Keyed], admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    """CreateTags: only at creation (ec2:CreateAction) or on what our cluster owns, and never
    the managed or cluster keys afterwards; terminate only what our cluster owns."""
    _, keyed = controller
    ec2 = keyed.client("ec2", region_name=REGION)
    ours = _instance(admin, world, OURS)
    foreign = _instance(admin, world, {keys.MANAGED: "true", keys.CLUSTER: "other-cluster"})
    unmanaged = _instance(admin, world, {"team": "a"})

    def tag(instance: str, key: str, value: str = "x") -> Callable[[], Any]:
        return lambda: ec2.create_tags(Resources=[instance], Tags=[{"Key": key, "Value": value}])

    def attempts() -> dict[str, str]:
        tag(ours, keys.KEEP_WARM_UNTIL, "2030-01-01T00:00:00Z")()  # what the pools write: allowed
        return error_codes(
            {
                "adopt-unmanaged": tag(unmanaged, keys.MANAGED, "true"),
                "claim-for-our-cluster": tag(unmanaged, keys.CLUSTER, CLUSTER),
                "tag-another-clusters": tag(foreign, keys.KEEP_WARM_UNTIL),
                "move-ours-to-another-cluster": tag(ours, keys.CLUSTER, "other-cluster"),
                "unmanage-ours": tag(ours, keys.MANAGED, "false"),
                "both-keys-among-others": lambda: ec2.create_tags(
                    Resources=[ours],
                    Tags=[{"Key": "note", "Value": "x"}, {"Key": keys.MANAGED, "Value": "true"}],
                ),
                "terminate-another-clusters": lambda: ec2.terminate_instances(
                    InstanceIds=[foreign]
                ),
                "terminate-ours-with-theirs": lambda: ec2.terminate_instances(
                    InstanceIds=[ours, unmanaged]
                ),
                "delete-tags": lambda: ec2.delete_tags(
                    Resources=[ours], Tags=[{"Key": keys.MANAGED}]
                ),
            }
        )

    codes = enforced(attempts)
    assert all(code in DENIED for code in codes.values()), codes
    assert len(codes) == 9
    got = {i["InstanceId"]: i for r in admin["ec2"].describe_instances()["Reservations"]
           for i in r["Instances"]}  # fmt: skip
    assert {t["Key"]: t["Value"] for t in got[ours]["Tags"]} == {
        **OURS,
        keys.KEEP_WARM_UNTIL: "2030-01-01T00:00:00Z",
    }
    assert {t["Key"] for t in got[unmanaged]["Tags"]} == {"team"}
    assert {i.id for i in live()} == {ours, foreign, unmanaged}


def test_launches_carry_our_cluster_and_land_only_in_our_groups(
    controller: tuple[Ec2Provider, Keyed], admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    _, keyed = controller
    ec2 = keyed.client("ec2", region_name=REGION)
    admin["ec2"].create_placement_group(GroupName="someone-elses", Strategy="cluster")
    subnet = world.subnets["us-east-1a"]

    def launch(tags: dict[str, str], **extra: Any) -> Callable[[], Any]:
        spec = [
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ]
        return lambda: ec2.run_instances(
            ImageId="ami-12345678", MinCount=1, MaxCount=1, SubnetId=subnet,
            TagSpecifications=spec, **extra,
        )  # fmt: skip

    codes = enforced(
        lambda: error_codes(
            {
                "tagged-for-another-cluster": launch({keys.MANAGED: "true", keys.CLUSTER: "x"}),
                "without-the-cluster-tag": launch({keys.MANAGED: "true"}),
                "into-someone-elses-group": launch(OURS, Placement={"GroupName": "someone-elses"}),
            }
        )
    )
    assert all(code in DENIED for code in codes.values()), codes
    assert len(codes) == 3
    assert live() == []


def test_launch_templates_change_only_when_our_cluster_owns_them(
    controller: tuple[Ec2Provider, Keyed], admin: dict[str, Any], fake: FakeAws
) -> None:
    _, keyed = controller
    ec2 = keyed.client("ec2", region_name=REGION)
    theirs = admin["ec2"].create_launch_template(
        LaunchTemplateName="team-b-nodes", LaunchTemplateData={"ImageId": "ami-12345678"}
    )["LaunchTemplate"]["LaunchTemplateId"]
    data = {"ImageId": "ami-12345678"}

    def untagged_create() -> Any:
        return ec2.create_launch_template(
            LaunchTemplateName="atomic-gang-x", LaunchTemplateData=data
        )

    codes = enforced(
        lambda: error_codes(
            {
                "create-untagged": untagged_create,
                "new-version-of-theirs": lambda: ec2.create_launch_template_version(
                    LaunchTemplateId=theirs, LaunchTemplateData=data
                ),
                "modify-theirs": lambda: ec2.modify_launch_template(
                    LaunchTemplateId=theirs, DefaultVersion="1"
                ),
                "modify-theirs-by-name": lambda: ec2.modify_launch_template(
                    LaunchTemplateName="team-b-nodes", DefaultVersion="1"
                ),
                "delete-theirs": lambda: ec2.delete_launch_template(LaunchTemplateId=theirs),
            }
        )
    )
    assert all(code in DENIED for code in codes.values()), codes
    assert len(codes) == 5
    names = [
        lt["LaunchTemplateName"]
        for lt in admin["ec2"].describe_launch_templates()["LaunchTemplates"]
    ]
    assert names == ["team-b-nodes"]


def test_what_moto_itself_enforces() -> None:
    """Without the layer, moto's evaluator gets the policy wrong both ways: it authorises
    every EC2 call against ``*`` only, so no ARN-scoped statement ever matches (every
    launch and terminate would be denied), and it skips conditions it has no context for,
    so a placement group or an ENI of another cluster passes. The layer evaluates with
    iam_eval, resource by resource, instead (test_fake_iam.py, test_iam_statements.py)."""
    policy = IAMPolicy(POLICY.read_text())
    assert policy.is_action_permitted("ec2:RunInstances", "*") == PermissionResult.NEUTRAL
    assert policy.is_action_permitted("ec2:TerminateInstances", "*") == PermissionResult.NEUTRAL
    theirs = "arn:aws:ec2:us-east-1:123456789012:placement-group/atomic-gang-other-cluster"
    assert policy.is_action_permitted("ec2:RunInstances", theirs) == PermissionResult.PERMITTED
    stranger = "arn:aws:ec2:us-east-1:123456789012:network-interface/eni-0123456789abcdef0"
    allowed = policy.is_action_permitted("ec2:DeleteNetworkInterface", stranger)
    assert allowed == PermissionResult.PERMITTED
    assert policy.is_action_permitted("ec2:CreateTags", "*") == PermissionResult.PERMITTED
    assert policy.is_action_permitted("ec2:CreateVpc", "*") == PermissionResult.NEUTRAL
    (launch,) = [
        st
        for st in json.loads(POLICY.read_text())["Statement"]
        if st["Sid"] == "LaunchTaggedInstances"
    ]
    assert launch["Condition"]["StringEquals"] == {
        "aws:RequestTag/atomic-gang.k8s.aws/managed": "true",
        "aws:RequestTag/atomic-gang.k8s.aws/cluster": EXAMPLE_CLUSTER,
    }

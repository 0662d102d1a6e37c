"""``iam.selfManageInstanceProfile``: the engine creates the convention-named
instance profile with the node role when it is missing; without the setting a
missing profile is a permanent error naming what to create."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import TRUST, World
from atomic_gang_provisioner.cloud import AcquireRequest, Launched, PermanentFailure
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from tests.integration.cloud.conftest import pool_instances

Spec = Callable[..., GangSpec]
Factory = Callable[..., Ec2Provider]
ROLE = "eks-gang-node-role"


def drop_profile(iam: Any, world: World) -> None:
    iam.remove_role_from_instance_profile(InstanceProfileName=world.instance_profile, RoleName=ROLE)
    iam.delete_instance_profile(InstanceProfileName=world.instance_profile)


def roles_of(iam: Any, name: str) -> list[str]:
    prof = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    return [r["Arn"] for r in prof["Roles"]]


def test_flag_on_creates_the_missing_profile_with_the_role(
    make_provider: Factory, make_spec: Spec, admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    drop_profile(admin["iam"], world)
    engine = make_provider(self_manage_instance_profile=True)
    result = engine.acquire(AcquireRequest(spec=make_spec(count=2), generation=0))
    assert isinstance(result, Launched)
    assert roles_of(admin["iam"], world.instance_profile) == [world.node_role_arn]
    (created,) = fake.calls("CreateInstanceProfile")
    assert created["params"]["InstanceProfileName"] == world.instance_profile
    (added,) = fake.calls("AddRoleToInstanceProfile")
    assert added["params"]["RoleName"] == ROLE
    described = admin["ec2"].describe_instances(InstanceIds=list(result.instance_ids))
    for inst in (i for r in described["Reservations"] for i in r["Instances"]):
        assert inst["IamInstanceProfile"]["Arn"].endswith("/" + world.instance_profile)
    # Verified once (read, create, add, read again), then cached: no more IAM calls.
    iam_calls = len(fake.calls())
    again = engine.acquire(AcquireRequest(spec=make_spec(pool="b", count=1), generation=0))
    assert isinstance(again, Launched)
    assert [c for c in fake.calls()[iam_calls:] if c["service"] == "iam"] == []


def test_flag_off_a_missing_profile_is_permanent(
    make_provider: Factory, make_spec: Spec, admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    drop_profile(admin["iam"], world)
    result = make_provider().acquire(AcquireRequest(spec=make_spec(), generation=0))
    assert isinstance(result, PermanentFailure)
    assert result.code == "InstanceProfileNotFound"
    assert world.instance_profile in result.message
    assert "iam.selfManageInstanceProfile" in result.hint
    assert fake.calls("CreateInstanceProfile") == []
    assert fake.calls("AddRoleToInstanceProfile") == []
    assert pool_instances("train") == []


def test_flag_on_an_empty_profile_gets_the_role(
    make_provider: Factory, make_spec: Spec, admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    """A crash between creating the profile and adding the role is repaired."""
    iam = admin["iam"]
    iam.remove_role_from_instance_profile(InstanceProfileName=world.instance_profile, RoleName=ROLE)
    engine = make_provider(self_manage_instance_profile=True)
    assert isinstance(engine.acquire(AcquireRequest(spec=make_spec(), generation=0)), Launched)
    assert fake.calls("CreateInstanceProfile") == []
    assert roles_of(iam, world.instance_profile) == [world.node_role_arn]


def test_flag_on_never_replaces_another_role(
    make_provider: Factory, make_spec: Spec, admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    iam = admin["iam"]
    other = iam.create_role(RoleName="other", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    iam.remove_role_from_instance_profile(InstanceProfileName=world.instance_profile, RoleName=ROLE)
    iam.add_role_to_instance_profile(InstanceProfileName=world.instance_profile, RoleName="other")
    engine = make_provider(self_manage_instance_profile=True)
    before = len(fake.calls())
    result = engine.acquire(AcquireRequest(spec=make_spec(), generation=0))
    assert [c["action"] for c in fake.calls()[before:] if c["service"] == "iam"] == [
        "GetInstanceProfile"
    ]
    assert isinstance(result, PermanentFailure)
    assert result.code == "InstanceProfileRoleMismatch"
    assert roles_of(iam, world.instance_profile) == [other]
    assert pool_instances("train") == []

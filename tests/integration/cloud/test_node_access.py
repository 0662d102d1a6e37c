"""Before any launch: may the node role join, and are the Job's subnets the cluster's?

Each case ends with what was launched (nothing, where the answer is no) and which
EKS calls were made, read from the layer's call log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from moto.eks.models import eks_backends

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws, eks_access
from atomic_gang_fakeaws.world import World
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from atomic_gang_provisioner.cloud.aws.cluster import ACCESS_TTL_SECONDS
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    Launched,
    PermanentFailure,
    RetryLater,
)
from tests.support.clock import ManualClock

from .conftest import CLUSTER, REGION, Factory, pool_instances

Spec = Callable[..., GangSpec]
LAUNCHES = ("RunInstances", "CreateFleet", "CreateLaunchTemplate")
NODE_GROUPS = "[system:bootstrappers, system:nodes]"


def _cluster() -> Any:
    return eks_backends["123456789012"][REGION].clusters[CLUSTER]


def _launch_calls(fake: FakeAws) -> list[dict[str, Any]]:
    return [c for c in fake.calls() if c["action"] in LAUNCHES]


def _map_roles(role_arn: str, groups: str = NODE_GROUPS) -> str:
    user = "system:node:{{EC2PrivateDNSName}}"
    return f"- rolearn: {role_arn}\n  username: {user}\n  groups: {groups}\n"


def _acquire(provider: Ec2Provider, spec: GangSpec) -> Any:
    return provider.acquire(AcquireRequest(spec=spec, generation=1))


@pytest.mark.parametrize("mode", ["runinstances", "fleet"])
def test_a_role_without_access_entry_launches_nothing_and_says_how_to_fix_it(
    provider: Ec2Provider,
    make_spec: Spec,
    admin: dict[str, Any],
    world: World,
    fake: FakeAws,
    mode: str,
) -> None:
    admin["eks"].delete_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn)
    result = _acquire(provider, make_spec(mode=mode))
    assert isinstance(result, PermanentFailure)
    assert (result.code, result.reason, result.rejects) == (
        "NodeRoleNotAuthorized",
        "NodeRoleNotAuthorized",
        False,
    )
    for part in (
        world.node_role_arn,
        f"cluster {CLUSTER}",
        "API_AND_CONFIG_MAP",
        "no access entry",
    ):
        assert part in result.message
    fix = (
        f"aws eks create-access-entry --cluster-name {CLUSTER} "
        f"--principal-arn {world.node_role_arn} --type EC2_LINUX"
    )
    assert fix in result.message
    assert _launch_calls(fake) == []
    assert pool_instances("train") == []


def test_a_no_is_asked_again_and_a_yes_is_cached(
    provider: Ec2Provider, make_spec: Spec, admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    eks = admin["eks"]
    eks.delete_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn)
    assert isinstance(_acquire(provider, make_spec()), PermanentFailure)
    eks.create_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn, type="EC2_LINUX")
    assert isinstance(_acquire(provider, make_spec()), Launched)  # no restart needed
    assert len(fake.calls("DescribeAccessEntry")) == 2
    assert isinstance(_acquire(provider, make_spec(pool="second")), Launched)
    assert len(fake.calls("DescribeAccessEntry")) == 2  # the yes stands for its window


def test_an_access_entry_removed_after_a_yes_stops_the_next_launch(
    provider: Ec2Provider,
    make_spec: Spec,
    admin: dict[str, Any],
    world: World,
    fake: FakeAws,
    clock: ManualClock,
) -> None:
    """A warm cache (gangs already ran), the entry deleted, a gang applied after the
    access window: nothing launches and the message names the access entry; re-creating
    the entry lets the same gang launch."""
    eks = admin["eks"]
    assert isinstance(_acquire(provider, make_spec(pool="earlier")), Launched)
    eks.delete_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn)
    clock.advance(ACCESS_TTL_SECONDS + 1)  # a person deleting an entry, then applying a Job
    before = len(_launch_calls(fake))
    result = _acquire(provider, make_spec(pool="next"))
    assert isinstance(result, PermanentFailure)
    assert result.code == "NodeRoleNotAuthorized"
    assert "it has no access entry" in result.message
    assert "create-access-entry" in result.message
    assert len(_launch_calls(fake)) == before
    assert pool_instances("next") == []
    eks.create_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn, type="EC2_LINUX")
    assert isinstance(_acquire(provider, make_spec(pool="next")), Launched)


def test_an_access_entry_of_another_type_does_not_let_nodes_join(
    provider: Ec2Provider, make_spec: Spec, admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    eks = admin["eks"]
    eks.delete_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn)
    eks.create_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn, type="STANDARD")
    result = _acquire(provider, make_spec())
    assert isinstance(result, PermanentFailure)
    assert "its access entry has type STANDARD, not EC2_LINUX" in result.message
    assert _launch_calls(fake) == []


def test_api_mode_never_reads_aws_auth(
    make_provider: Factory, make_spec: Spec, admin: dict[str, Any], world: World
) -> None:
    reads: list[int] = []

    def aws_auth() -> str | None:
        reads.append(1)
        return _map_roles(world.node_role_arn)

    admin["eks"].update_cluster_config(name=CLUSTER, accessConfig={"authenticationMode": "API"})
    provider = make_provider(aws_auth=aws_auth)
    assert isinstance(_acquire(provider, make_spec()), Launched)
    admin["eks"].delete_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn)
    other = make_provider(aws_auth=aws_auth)
    result = _acquire(other, make_spec(pool="b"))
    assert isinstance(result, PermanentFailure)
    assert "authentication mode API)" in result.message
    assert reads == []


@pytest.mark.parametrize(
    ("mapping", "authorized", "why"),
    [
        pytest.param("same", True, "", id="mapped-with-node-groups"),
        pytest.param(
            "path", False, "aws-auth matches role ARNs without their path", id="mapped-with-a-path"
        ),
        pytest.param(
            "groups",
            False,
            "lacks the groups system:bootstrappers",
            id="mapped-without-bootstrappers",
        ),
        pytest.param(
            "other", False, "has no mapRoles entry with rolearn", id="another-role-mapped"
        ),
        pytest.param(None, False, "there is no kube-system/aws-auth ConfigMap", id="no-configmap"),
    ],
)
def test_config_map_mode_reads_aws_auth(
    make_provider: Factory,
    make_spec: Spec,
    world: World,
    fake: FakeAws,
    mapping: str | None,
    authorized: bool,
    why: str,
) -> None:
    eks_access.set_authentication_mode(_cluster(), "CONFIG_MAP")
    role = world.node_role_arn
    text = {
        "same": _map_roles(role),
        "path": _map_roles(role.replace(":role/", ":role/team/")),
        "groups": _map_roles(role, "[system:nodes]"),
        "other": _map_roles(role.replace("eks-gang-node-role", "someone-else")),
        None: None,
    }[mapping]
    result = _acquire(make_provider(aws_auth=lambda: text), make_spec())
    assert fake.calls("DescribeAccessEntry") == []  # not available in CONFIG_MAP mode
    if authorized:
        assert isinstance(result, Launched)
        return
    assert isinstance(result, PermanentFailure)
    assert why in result.message
    assert "add it to kube-system/aws-auth mapRoles" in result.message
    assert _launch_calls(fake) == []


def test_api_and_config_map_falls_back_on_aws_auth(
    make_provider: Factory, make_spec: Spec, admin: dict[str, Any], world: World
) -> None:
    admin["eks"].delete_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn)
    provider = make_provider(aws_auth=lambda: _map_roles(world.node_role_arn))
    assert isinstance(_acquire(provider, make_spec()), Launched)


def test_an_unreadable_aws_auth_is_retried_not_launched(
    make_provider: Factory, make_spec: Spec, world: World, fake: FakeAws
) -> None:
    eks_access.set_authentication_mode(_cluster(), "CONFIG_MAP")

    def forbidden() -> str | None:
        raise PermissionError("configmaps 'aws-auth' is forbidden")

    result = _acquire(make_provider(aws_auth=forbidden), make_spec())
    assert isinstance(result, RetryLater)
    assert result.code == "AwsAuthUnreadable"
    assert "forbidden" in result.message
    assert _launch_calls(fake) == []


def test_a_subnet_outside_the_cluster_vpc_rejects_the_gang(
    provider: Ec2Provider, make_spec: Spec, admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    stranger = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/24", AvailabilityZone="us-east-1a")
    sid = stranger["Subnet"]["SubnetId"]
    ours = world.subnets["us-east-1b"]
    result = _acquire(provider, make_spec(subnets=(ours, sid)))
    assert isinstance(result, PermanentFailure)
    assert (result.reason, result.rejects) == ("InvalidSubnet", True)
    assert f"subnet {sid} is in {vpc}" in result.message
    assert f"cluster {CLUSTER}'s VPC {world.vpc_id}" in result.message
    missing = _acquire(provider, make_spec(pool="b", subnets=("subnet-0123456789abcdef0",)))
    assert isinstance(missing, PermanentFailure)
    assert missing.rejects
    assert f"subnet subnet-0123456789abcdef0 does not exist in {REGION}" in missing.message
    assert _launch_calls(fake) == []
    assert isinstance(_acquire(provider, make_spec(pool="c", subnets=(ours,))), Launched)

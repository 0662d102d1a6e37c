"""Seed what the engine expects to find: a VPC with one subnet per AZ, an EKS
cluster on them (API_AND_CONFIG_MAP), and the node role with its convention-named
instance profile and an EC2_LINUX access entry.

:func:`seed_world` works through any boto3 client (in-process moto or a server
endpoint); :func:`seed_backends` writes straight into moto's backends, for tests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.eks.models import eks_backends
from moto.iam.models import iam_backends

from atomic_gang_fakeaws import eks_access

AUTH_MODE = "API_AND_CONFIG_MAP"  # what the EKS console creates today
PROFILE_MAX = 128  # IAM's limit on an instance profile's name

TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)


@dataclass(frozen=True)
class World:
    region: str
    cluster: str
    vpc_id: str
    subnets: dict[str, str]
    node_role_arn: str
    instance_profile: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def seed_world(
    client: Any,
    *,
    region: str,
    cluster: str = "demo",
    zones: tuple[str, ...] = ("a", "b", "c"),
    role_name: str = "eks-gang-node-role",
    version: str = "1.31",
) -> World:
    """``client(service_name)`` must return a boto3 client for ``region``."""
    ec2, iam, eks = client("ec2"), client("iam"), client("eks")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {}
    for i, suffix in enumerate(zones):
        zone = region + suffix
        sub = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone)
        subnets[zone] = sub["Subnet"]["SubnetId"]
    role = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    profile = instance_profile_name(cluster=cluster, role_name=role_name)
    iam.create_instance_profile(InstanceProfileName=profile)
    iam.add_role_to_instance_profile(InstanceProfileName=profile, RoleName=role_name)
    eks.create_cluster(
        name=cluster,
        version=version,
        roleArn=f"arn:aws:iam::{role.split(':')[4]}:role/eks-cluster-role",
        resourcesVpcConfig={"subnetIds": list(subnets.values())},
        accessConfig={"authenticationMode": AUTH_MODE},
    )
    # The node role may join: what `aws eks create-access-entry --type EC2_LINUX` does.
    eks.create_access_entry(clusterName=cluster, principalArn=role, type="EC2_LINUX")
    return World(region, cluster, vpc, subnets, role, profile)


def seed_backends(
    *,
    region: str,
    cluster: str = "demo",
    zones: tuple[str, ...] = ("a", "b", "c"),
    role_name: str = "eks-gang-node-role",
    version: str = "1.31",
    account: str = DEFAULT_ACCOUNT_ID,
) -> World:
    """:func:`seed_world` straight into moto's backends: in-process only, ~10× faster."""
    ec2 = ec2_backends[account][region]
    vpc = ec2.create_vpc(cidr_block="10.0.0.0/16")
    subnets = {
        region + s: ec2.create_subnet(
            vpc_id=vpc.id, cidr_block=f"10.0.{i}.0/24", availability_zone=region + s
        ).id
        for i, s in enumerate(zones)
    }
    iam = iam_backends[account]["aws"]
    role = iam.create_role(role_name, TRUST, "/", None, "", [], None)
    profile = instance_profile_name(cluster=cluster, role_name=role_name)
    iam.create_instance_profile(profile, "/", [role_name])
    created = eks_backends[account][region].create_cluster(
        name=cluster,
        role_arn=f"arn:aws:iam::{account}:role/eks-cluster-role",
        resources_vpc_config={"subnetIds": list(subnets.values())},
        version=version,
    )
    eks_access.set_authentication_mode(created, AUTH_MODE)
    eks_access.add_entry(created, role.arn, type_="EC2_LINUX")
    return World(region, cluster, vpc.id, subnets, role.arn, profile)


def instance_profile_name(*, cluster: str, role_name: str) -> str:
    """The instance profile an operator creates by convention (docs/operations.md):
    ``atomic-gang-instance-profile-<cluster>-<role-name>``, hash-truncated at 128."""
    name = f"atomic-gang-instance-profile-{cluster}-{role_name}"
    if len(name) <= PROFILE_MAX:
        return name
    return f"{name[: PROFILE_MAX - 9]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"

"""Everything a launch needs to know that changes rarely, with a TTL cache.

Join parameters, VPC, authentication mode and cluster security group from eks:DescribeCluster (node
role access: ``access``); AZ→subnet placement (the Job's own subnets checked) from
ec2:DescribeSubnets; the AMI from the EKS-optimized AL2023 SSM parameter; architecture and EFA
limits from ec2:DescribeInstanceTypes; the EFA self rule from DescribeSecurityGroups; the instance
profile from iam:GetInstanceProfile (made when missing, with ``iam.selfManageInstanceProfile``).
Caching keeps a warm acquisition at one launch call plus the adoption read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from atomic_gang import GangSpec, patterns
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.aws.access import AwsAuthReader, NodeRoleAccess
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.efa import check_security_group
from atomic_gang_provisioner.cloud.aws.instance_types import TypeInfo, describe_type
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.userdata import ClusterJoin

T = TypeVar("T")
SSM_AMI = (
    "/aws/service/eks/optimized-ami/{version}/amazon-linux-2023/{arch}/{variant}"
    "/recommended/image_id"
)


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    join: ClusterJoin
    version: str
    security_group_id: str
    subnet_ids: tuple[str, ...]
    vpc_id: str = ""
    # accessConfig.authenticationMode; a cluster that reports none predates access entries.
    auth_mode: str = "CONFIG_MAP"


@dataclass(frozen=True, slots=True)
class Placement:
    zone: str
    subnet_id: str
    free_ips: int
    vpc_id: str = ""


# How long a "yes, the node role may join" stands. One DescribeAccessEntry per role per
# window is shared by every pool launching in it (EKS's control-plane API budget is far
# above that), while a role whose access was removed bills at most the launches of one
# window. The join deadline (minutes) is far longer, so a gang whose nodes never
# registered is always re-checked afresh before its next launch.
ACCESS_TTL_SECONDS = 15.0


def service_cidr(network: dict[str, Any]) -> str:
    """The cluster's service CIDR for nodeadm's NodeConfig: IPv4, or an IPv6 cluster's
    (EKS reports it as serviceIpv6Cidr; nodeadm refuses a NodeConfig without one)."""
    return str(network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr") or "")


class Resolver:
    def __init__(
        self,
        *,
        clients: AwsClients,
        caller: Caller,
        cluster: str,
        monotonic: Callable[[], float],
        ttl_seconds: float,
        access_ttl_seconds: float = ACCESS_TTL_SECONDS,
        self_manage_profile: bool = False,
        aws_auth: AwsAuthReader | None = None,
    ) -> None:
        self._c = clients
        self._access = NodeRoleAccess(
            eks=clients.eks, caller=caller, cluster=cluster, aws_auth=aws_auth
        )
        self._self_manage = self_manage_profile
        self._call = caller.call
        self._cluster = cluster
        self._now = monotonic
        self._ttl = ttl_seconds
        self._access_ttl = access_ttl_seconds
        self._cache: dict[tuple[str, ...], tuple[float, Any]] = {}

    def _cached(self, key: tuple[str, ...], load: Callable[[], T], ttl: float | None = None) -> T:
        hit = self._cache.get(key)
        if hit is not None and self._now() - hit[0] < (self._ttl if ttl is None else ttl):
            value: T = hit[1]
            return value
        value = load()
        self._cache[key] = (self._now(), value)
        return value

    def cluster(self) -> ClusterInfo:
        return self._cached(("cluster",), self._load_cluster)

    def discover(self) -> None:
        """Resolve the cluster and its subnets now (warm caches, fail fast)."""
        self._subnets(self.cluster().subnet_ids)

    def _load_cluster(self) -> ClusterInfo:
        c = self._call(self._c.eks, "describe_cluster", name=self._cluster)["cluster"]
        vpc = c.get("resourcesVpcConfig", {})
        join = ClusterJoin(
            name=self._cluster,
            endpoint=str(c["endpoint"]).rstrip("/"),
            certificate_authority=str(c["certificateAuthority"]["data"]),
            service_cidr=service_cidr(c.get("kubernetesNetworkConfig") or {}),
        )
        return ClusterInfo(
            join=join,
            version=str(c["version"]),
            security_group_id=str(vpc.get("clusterSecurityGroupId", "")),
            subnet_ids=tuple(vpc.get("subnetIds", ())),
            vpc_id=str(vpc.get("vpcId", "")),
            auth_mode=str((c.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP"),
        )

    def authorize_node_role(self, role_arn: str) -> None:
        """Raises NodeRoleNotAuthorized unless the cluster lets the role join. A yes is
        kept only ``access_ttl_seconds`` (the other cluster facts: ``ttl_seconds``): an
        access entry deleted meanwhile must stop the next launch, not one ten minutes
        later, since every instance launched without it bills and never registers; a no
        is asked again next time."""
        mode = self.cluster().auth_mode
        self._cached(
            ("node-role", role_arn),
            lambda: self._access.verify(role_arn, mode),
            ttl=self._access_ttl,
        )

    def _subnets(self, ids: tuple[str, ...]) -> list[Placement]:
        def load() -> list[Placement]:
            # A filter, not SubnetIds: EC2 fails the whole call on one unknown id.
            raw = self._call(
                self._c.ec2,
                "describe_subnets",
                Filters=[{"Name": "subnet-id", "Values": list(ids)}],
            )["Subnets"]
            by_id = {
                s["SubnetId"]: Placement(
                    s["AvailabilityZone"],
                    s["SubnetId"],
                    int(s["AvailableIpAddressCount"]),
                    str(s.get("VpcId", "")),
                )
                for s in raw
            }
            return [by_id[i] for i in ids if i in by_id]

        return self._cached(("subnets", *ids), load)

    def placements(self, spec: GangSpec) -> tuple[Placement, ...]:
        """Explicit subnets in their order; else one subnet per AZ, in sweep order."""
        if spec.subnets:
            return self._explicit(spec)
        found = self._subnets(self.cluster().subnet_ids)
        zones = spec.availability_zones or tuple(sorted({p.zone for p in found}))
        out: list[Placement] = []
        for zone in zones:
            here = [p for p in found if p.zone == zone]
            if here:
                out.append(max(here, key=lambda p: (p.free_ips, p.subnet_id)))
        return tuple(out)

    def _explicit(self, spec: GangSpec) -> tuple[Placement, ...]:
        """The Job's own subnets, each checked to exist in the region and the cluster's
        VPC: an instance elsewhere could never reach the API server, so never join."""
        found = {p.subnet_id: p for p in self._subnets(spec.subnets)}
        vpc = self.cluster().vpc_id
        for sid in spec.subnets:
            p = found.get(sid)
            if p is None:
                raise CloudError(
                    "SubnetNotInCluster",
                    f"subnet {sid} does not exist in {spec.region}; "
                    f"cluster {self._cluster} uses {vpc or 'its own VPC'}",
                )
            if vpc and p.vpc_id != vpc:
                raise CloudError(
                    "SubnetNotInCluster",
                    f"subnet {sid} is in {p.vpc_id}, not in cluster {self._cluster}'s VPC {vpc}",
                )
        return tuple(found[s] for s in spec.subnets)

    def instance_type(self, name: str) -> TypeInfo:
        """Architecture and EFA limits (one DescribeInstanceTypes, cached)."""
        return self._cached(("type", name), lambda: describe_type(self._c.ec2, self._call, name))

    def efa_security_group(self, gid: str) -> None:
        """Raises EfaSecurityGroup unless it allows itself both ways (a yes is cached)."""
        self._cached(("efa-sg", gid), lambda: check_security_group(self._c.ec2, self._call, gid))

    def ami(self, spec: GangSpec) -> str:
        if spec.ami_id:
            return spec.ami_id
        name = SSM_AMI.format(
            version=self.cluster().version,
            arch=self.instance_type(spec.instance_type).arch,
            variant=spec.ami_variant,
        )

        def load() -> str:
            return str(self._call(self._c.ssm, "get_parameter", Name=name)["Parameter"]["Value"])

        return self._cached(("ami", name), load)

    def instance_profile(self, spec: GangSpec) -> str:
        """The convention-named profile, verified to hold the node role."""
        name = naming.instance_profile_name(cluster=self._cluster, node_role_arn=spec.node_role_arn)
        return self._cached(("profile", name, spec.node_role_arn), lambda: self._verify(name, spec))

    def _verify(self, name: str, spec: GangSpec) -> str:
        prof = self._get_profile(name)
        if self._self_manage and (prof is None or not prof.get("Roles")):
            prof = self._provision_profile(name, spec, exists=prof is not None)
        if prof is None:
            raise CloudError("InstanceProfileNotFound", f"instance profile {name} does not exist")
        roles = prof.get("Roles", [])
        want = patterns.role_name(spec.node_role_arn)
        if not any(r.get("Arn") == spec.node_role_arn or r.get("RoleName") == want for r in roles):
            held = ", ".join(r.get("Arn", "?") for r in roles) or "no role"
            raise CloudError(
                "InstanceProfileRoleMismatch",
                f"instance profile {name} holds {held}, not {spec.node_role_arn}",
            )
        return name

    def _get_profile(self, name: str) -> dict[str, Any] | None:
        try:
            prof = self._call(self._c.iam, "get_instance_profile", InstanceProfileName=name)
        except CloudError as err:
            if err.kind == "not_found":
                return None
            raise
        found: dict[str, Any] = prof["InstanceProfile"]
        return found

    def _provision_profile(self, name: str, spec: GangSpec, *, exists: bool) -> dict[str, Any]:
        """Create the profile (if missing) and add the node role (if it holds none).

        Another replica may race us: "already exists" and "already holds a role"
        are fine, the final read decides. IAM is eventually consistent, so a
        profile not yet readable after its creation is a retryable error.
        """
        iam = self._c.iam
        if not exists:
            try:
                self._call(iam, "create_instance_profile", InstanceProfileName=name)
            except CloudError as err:
                if err.code != "EntityAlreadyExists":
                    raise
        role = patterns.role_name(spec.node_role_arn)
        try:
            self._call(iam, "add_role_to_instance_profile", InstanceProfileName=name, RoleName=role)
        except CloudError as err:
            if err.code != "LimitExceeded":
                raise
        prof = self._get_profile(name)
        if prof is None:
            raise CloudError(
                "InstanceProfileNotYetVisible",
                f"created {name}; IAM does not show it yet",
                http_status=503,
            )
        return prof

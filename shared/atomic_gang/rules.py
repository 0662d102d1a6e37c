"""One rule per annotation, each with its own reason code.

Every check appends to a :class:`Collector` instead of raising, so a Job with
five mistakes is told about all five. :func:`check_scalars` returns the
resolved values (defaults applied) or None when anything failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from atomic_gang import allowlists, duration_rules, keys, patterns, reservation_rules
from atomic_gang.errors import Collector, Reason
from atomic_gang.network_rules import check_network
from atomic_gang.settings import GangSettings
from atomic_gang.spec import AMI_VARIANTS, MODES, REPAIRS, derive_ami_variant


def _count(ann: Mapping[str, str], s: GangSettings, out: Collector) -> int | None:
    raw = ann.get(keys.COUNT)
    if raw is None:
        return None
    if not patterns.COUNT.match(raw):
        out.add(
            keys.COUNT,
            "InvalidCount",
            "must be a positive integer",
            raw,
            'write it as a quoted decimal, e.g. "4"',
        )
        return None
    n = int(raw)
    if n > s.limits.max_gang_size:
        out.add(
            keys.COUNT,
            "CountExceedsLimit",
            f"must be <= limits.maxGangSize ({s.limits.max_gang_size})",
            raw,
            "split the job or ask an admin to raise limits.maxGangSize",
        )
        return None
    return n


def _instance_type(ann: Mapping[str, str], s: GangSettings, out: Collector) -> str | None:
    raw = ann.get(keys.INSTANCE_TYPE)
    if raw is None:
        return None
    if not patterns.INSTANCE_TYPE.match(raw):
        out.add(
            keys.INSTANCE_TYPE,
            "InvalidInstanceType",
            "is not an EC2 instance type (family.size)",
            raw,
            "e.g. p4d.24xlarge",
        )
        return None
    if not patterns.allowed(raw, s.allowed_instance_types):
        out.add(
            keys.INSTANCE_TYPE,
            "InstanceTypeNotAllowed",
            "is not in allowedInstanceTypes",
            raw,
            "allowed: " + ", ".join(s.allowed_instance_types),
        )
        return None
    return raw


def _choice(
    ann: Mapping[str, str], key: str, choices: tuple[str, ...], reason: Reason, out: Collector
) -> str | None:
    raw = ann.get(key)
    if raw is not None and raw not in choices:
        out.add(key, reason, "must be one of " + ", ".join(choices), raw)
        return None
    return raw


def _region(ann: Mapping[str, str], s: GangSettings, out: Collector) -> str | None:
    raw = ann.get(keys.REGION)
    region = s.defaults.region
    if raw is None:
        if not region:
            out.add(
                keys.REGION,
                "MissingRequired",
                "no region given and no defaults.region set",
                None,
                f"set {keys.REGION} or configure defaults.region",
            )
            return None
        return region
    if region and raw != region:
        out.add(
            keys.REGION,
            "RegionMismatch",
            f"must equal the cluster region {region}",
            raw,
            "gang nodes can only launch in the EKS cluster's own region",
        )
        return None
    if not patterns.REGION.match(raw):
        out.add(keys.REGION, "InvalidRegion", "is not an AWS region", raw, "e.g. us-east-1")
        return None
    return raw


def _csv(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(",")]


def _zones(ann: Mapping[str, str], region: str | None, out: Collector) -> tuple[str, ...]:
    raw = ann.get(keys.AVAILABILITY_ZONES)
    if raw is None:
        return ()
    zones = _csv(raw)
    bad = [z for z in zones if not z or not patterns.zone_syntax(z)]
    if bad or len(set(zones)) != len(zones):
        out.add(
            keys.AVAILABILITY_ZONES,
            "InvalidAvailabilityZone",
            "must be a comma-separated list of distinct zone names",
            raw,
            "e.g. us-east-1a,us-east-1b",
        )
        return ()
    if region:
        outside = [z for z in zones if not patterns.zone_in_region(z, region)]
        if outside:
            out.add(
                keys.AVAILABILITY_ZONES,
                "InvalidAvailabilityZone",
                f"zones {', '.join(outside)} are not in region {region}",
                raw,
            )
            return ()
    return tuple(zones)


def _subnets(ann: Mapping[str, str], s: GangSettings, out: Collector) -> tuple[str, ...]:
    raw = ann.get(keys.SUBNETS)
    if raw is None:
        return ()
    subnets = _csv(raw)
    if any(not patterns.SUBNET_ID.match(x) for x in subnets) or len(set(subnets)) != len(subnets):
        out.add(
            keys.SUBNETS,
            "InvalidSubnet",
            "must be a comma-separated list of distinct subnet ids",
            raw,
            "e.g. subnet-0123456789abcdef0",
        )
        return ()
    if keys.AVAILABILITY_ZONES in ann:
        out.add(
            keys.SUBNETS,
            "ZonesAndSubnetsExclusive",
            f"cannot be combined with {keys.AVAILABILITY_ZONES}",
            raw,
            "subnets already pin the zones; remove one of the two",
        )
        return ()
    return allowlists.subnets(raw, tuple(subnets), s, out)


def _role(ann: Mapping[str, str], s: GangSettings, out: Collector) -> str | None:
    raw = ann.get(keys.NODE_ROLE_ARN)
    if raw is None:
        if not s.defaults.node_role_arn:
            out.add(
                keys.NODE_ROLE_ARN,
                "MissingRequired",
                "no node role given and no defaults.nodeRoleArn configured",
                None,
                f"set {keys.NODE_ROLE_ARN}",
            )
        return s.defaults.node_role_arn or None
    if not patterns.ROLE_ARN.match(raw):
        out.add(
            keys.NODE_ROLE_ARN,
            "InvalidNodeRoleArn",
            "is not an IAM role ARN",
            raw,
            "e.g. arn:aws:iam::123456789012:role/eks-gang-node-role",
        )
        return None
    if raw not in s.allowed_roles:
        # Never the list: role ARNs name the account and other teams' roles.
        where = "allowedNodeRoleArns" if s.allowed_node_role_arns else "defaults.nodeRoleArn"
        out.add(
            keys.NODE_ROLE_ARN,
            "NodeRoleNotAllowed",
            "is not in allowedNodeRoleArns (the controller may only pass those roles)",
            raw,
            f"the allowed roles are the cluster admin's ({where}): ask them which to use, "
            f"or leave {keys.NODE_ROLE_ARN} unset for the default role",
        )
        return None
    return raw


def _pattern(
    ann: Mapping[str, str], key: str, regex: Any, reason: Reason, eg: str, out: Collector
) -> str | None:
    raw = ann.get(key)
    if raw is not None and not regex.match(raw):
        out.add(key, reason, f"must look like {eg}", raw)
        return None
    return raw


def _ids(ann: Mapping[str, str], s: GangSettings, out: Collector) -> tuple[str | None, str | None]:
    """The image and the capacity reservations: syntax, then the admin's allowlists."""
    ami = _pattern(ann, keys.AMI_ID, patterns.AMI_ID, "InvalidAmiId", "ami-0123456789abcdef0", out)
    return allowlists.ami(ami, s, out), reservation_rules.reservations(ann, s, out)


def check_scalars(ann: Mapping[str, str], s: GangSettings, out: Collector) -> dict[str, Any] | None:
    """Check every annotation value; return GangSpec kwargs when all passed."""
    before = out.total
    count = _count(ann, s, out)
    itype = _instance_type(ann, s, out)
    mode = _choice(ann, keys.MODE, MODES, "InvalidMode", out) or s.defaults.mode
    region = _region(ann, s, out)
    zones = _zones(ann, region, out)
    subnets = _subnets(ann, s, out)
    role = _role(ann, s, out)
    ttl = duration_rules.keep_warm(ann, s, out)
    life = duration_rules.max_lifetime(ann, s, out)
    variant = _choice(ann, keys.AMI_VARIANT, AMI_VARIANTS, "InvalidAmiVariant", out)
    ami, cr = _ids(ann, s, out)
    need = duration_rules.min_runtime(ann, out)
    repair = _choice(ann, keys.REPAIR, REPAIRS, "InvalidRepair", out) or "auto"
    network = check_network(ann, mode=mode, zones=zones, subnets=subnets, out=out)
    network["placement_group_name"] = allowlists.placement_group(
        network["placement_group_name"], s, out
    )
    if out.total != before or None in (count, itype, region, role, ttl, life):
        return None
    assert itype is not None
    return {
        "count": count,
        "instance_type": itype,
        "mode": mode,
        "region": region,
        "availability_zones": zones,
        "subnets": subnets,
        "node_role_arn": role,
        "keep_warm_ttl": ttl,
        "max_lifetime": life,
        "ami_variant": variant or derive_ami_variant(itype),
        "ami_id": ami,
        "capacity_reservation_id": cr,
        "min_runtime": need,
        "repair": repair,
        **network,
    }

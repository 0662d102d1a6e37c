"""What EC2 authorises RunInstances and CreateFleet against: each resource on its own.

EC2 authorises one launch once per resource it touches, each with its own ARN and the
condition keys of that resource type (the Service Authorization Reference):

* what it creates (instance, volume, network-interface, and a CreateFleet's fleet), as
  ``…:<type>/*``, with ``aws:RequestTag/<k>`` and ``aws:TagKeys`` from the tags that type
  is created with: the launch template's TagSpecifications with the request's on top;
* what it uses (the launch template, the image, each subnet and security group, the
  placement group, the capacity reservation), from the request, its launch template and
  a fleet's overrides, with their own tags as ``ec2:ResourceTag/<k>`` and no request
  tags, so a statement conditioned on ``aws:RequestTag`` never covers them. A launch
  naming no security group uses its VPC's default one, and is authorised against it.

A policy that covers some of these types but not the others therefore denies every
launch, as EC2 does. Not simulated: key pairs, snapshots and license configurations
(the engine uses none of them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from moto.ec2.exceptions import InvalidLaunchTemplateVersionNotFound, InvalidSubnetIdError

from atomic_gang_fakeaws import placement

CREATED = ("instance", "volume", "network-interface")
TEMPLATE_KEY = re.compile(r"(.*)LaunchTemplate(Id|Name)")
TAG_TYPE_KEY = re.compile(r"(TagSpecification\.\d+)\.ResourceType")
OVERRIDE = r"LaunchTemplateConfigs\.\d+\.Overrides\.\d+\."  # a fleet override's keys
USED_PARAMS: dict[str, re.Pattern[str]] = {
    "image": re.compile(rf"({OVERRIDE})?ImageId"),
    "subnet": re.compile(rf"({OVERRIDE}|NetworkInterface\.\d+\.)?SubnetId"),
    "security-group": re.compile(r"(NetworkInterface\.\d+\.)?SecurityGroupId\.\d+"),
    "placement-group": re.compile(rf"({OVERRIDE})?Placement\.GroupName"),
    "capacity-reservation": re.compile(
        r"CapacityReservationSpecification\.CapacityReservationTarget\.CapacityReservationId"
    ),
}


@dataclass(frozen=True)
class LaunchResource:
    kind: str
    arn: str
    tags: dict[str, str] = field(default_factory=dict)  # a used resource's own tags
    request_tags: dict[str, str] | None = None  # a created one's tags; None: used, not created


def launch_resources(
    backend: Any, *, action: str, params: dict[str, str], region: str, account: str
) -> list[LaunchResource]:
    """Every resource ``action`` (``ec2:RunInstances`` or ``ec2:CreateFleet``) touches."""
    templates = list(_templates(backend, params))
    datas = [data for _, data in templates]
    tags = created_tags(datas, params)
    kinds = (*CREATED, "fleet") if action == "ec2:CreateFleet" else CREATED
    arn = f"arn:aws:ec2:{region}:{account}:{{}}/*"
    out = [
        LaunchResource(kind, arn.format(kind), request_tags=tags.get(kind, {})) for kind in kinds
    ]
    used = _used(backend, params, datas)
    used["launch-template"] = sorted({tid for tid, _ in templates})
    for kind in ("launch-template", *USED_PARAMS):
        for rid in used.get(kind, []):
            owner = "" if kind == "image" else account  # AMI ARNs name no account
            own = _own_tags(backend, kind, rid)
            out.append(LaunchResource(kind, f"arn:aws:ec2:{region}:{owner}:{kind}/{rid}", tags=own))
    return out


def _templates(backend: Any, params: dict[str, str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The launch templates named (by id or name) and the data of the version used."""
    for key, value in params.items():
        m = TEMPLATE_KEY.fullmatch(key)
        if not m:
            continue
        tid = value if m.group(2) == "Id" else backend.launch_template_name_to_ids.get(value)
        if tid not in backend.launch_templates:
            continue  # moto answers for a template that does not exist
        version = params.get(m.group(1) + "Version", "$Default")
        try:
            data: dict[str, Any] = backend.get_launch_template(tid).get_version(version).data
        except (InvalidLaunchTemplateVersionNotFound, ValueError):
            # an unknown or deleted version, or not a number: moto answers for it
            continue
        yield tid, data


def created_tags(datas: list[dict[str, Any]], params: dict[str, str]) -> dict[str, dict[str, str]]:
    """The tags each created type gets: the templates', the request's winning per key."""
    out: dict[str, dict[str, str]] = {}
    for data in datas:
        for spec in data.get("TagSpecifications") or []:
            pairs = {str(t["Key"]): str(t.get("Value", "")) for t in spec.get("Tags") or []}
            out.setdefault(str(spec.get("ResourceType")), {}).update(pairs)
    for key, kind in params.items():
        m = TAG_TYPE_KEY.fullmatch(key)
        if not m:
            continue
        tag_key = re.compile(re.escape(m.group(1)) + r"\.Tag\.\d+\.Key")
        pairs = {v: params.get(k[: -len("Key")] + "Value", "") for k, v in params.items()
                 if tag_key.fullmatch(k)}  # fmt: skip
        out.setdefault(kind, {}).update(pairs)
    return out


def _used(
    backend: Any, params: dict[str, str], datas: list[dict[str, Any]]
) -> dict[str, list[str]]:
    found: dict[str, set[str]] = {kind: set() for kind in USED_PARAMS}
    for key, value in params.items():
        for kind, pattern in USED_PARAMS.items():
            if value and pattern.fullmatch(key):
                found[kind].add(value)
    for data in datas:
        _from_template(data, found)
    if not found["security-group"]:
        found["security-group"] |= _default_group(backend, found["subnet"])
    return {kind: sorted(ids) for kind, ids in found.items()}


def _from_template(data: dict[str, Any], found: dict[str, set[str]]) -> None:
    if data.get("ImageId"):
        found["image"].add(str(data["ImageId"]))
    found["security-group"] |= {str(g) for g in data.get("SecurityGroupIds") or []}
    for nic in data.get("NetworkInterfaces") or []:
        if nic.get("SubnetId"):
            found["subnet"].add(str(nic["SubnetId"]))
        found["security-group"] |= {str(g) for g in nic.get("Groups") or []}
    group = (data.get("Placement") or {}).get("GroupName")
    if group:
        found["placement-group"].add(str(group))
    target = (data.get("CapacityReservationSpecification") or {}).get(
        "CapacityReservationTarget"
    ) or {}
    if target.get("CapacityReservationId"):
        found["capacity-reservation"].add(str(target["CapacityReservationId"]))


def _default_group(backend: Any, subnets: set[str]) -> set[str]:
    for subnet_id in sorted(subnets):
        try:
            vpc_id = backend.get_subnet(subnet_id).vpc_id
        except InvalidSubnetIdError:
            continue  # moto answers for a subnet that does not exist
        group = backend.get_default_security_group(vpc_id)
        if group is not None:
            return {str(group.id)}
    return set()


def _own_tags(backend: Any, kind: str, rid: str) -> dict[str, str]:
    if kind == "placement-group":
        group = placement.groups(backend).get(rid)
        return dict(group.tags) if group else {}
    return dict(backend.tags.get(rid, {}))

"""Placement groups, which moto lacks: create, describe, delete, and launching into one.

* CreatePlacementGroup (``cluster|spread|partition``), tagged from
  TagSpecifications; a taken name is ``InvalidPlacementGroup.Duplicate``.
* DescribePlacementGroups by name, id or filter (``group-name``, ``group-id``,
  ``group-arn``, ``strategy``, ``state``, ``tag:<k>``, ``tag-key``); an unknown
  name or id is ``InvalidPlacementGroup.Unknown``.
* DeletePlacementGroup: ``InvalidPlacementGroup.InUse`` while an instance is in
  it (terminated ones too, for ``delete_lag`` more calls: see ``network``).
* Launching (``Placement.GroupName``/``GroupId`` of the request, the launch
  template or a fleet override): a cluster group holds one AZ while it has live
  members, and only as many instances of a type as the control API allows.
Codes EC2 documents are used; the exact text of messages is ours.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.ec2.responses import EC2Response

from atomic_gang_fakeaws.errors import AwsError, insufficient_capacity
from atomic_gang_fakeaws.state import FakeState, active

STRATEGIES = ("cluster", "spread", "partition")
LIVE = frozenset({"pending", "running", "stopping", "stopped", "shutting-down"})
NAME_MAX = 255


@dataclass
class Group:
    name: str
    group_id: str
    strategy: str
    arn: str
    tags: dict[str, str] = field(default_factory=dict)
    partition_count: int | None = None
    state: str = "available"
    refusals: int = 0  # deletes refused since only terminated members were left

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "GroupName": self.name,
            "GroupId": self.group_id,
            "GroupArn": self.arn,
            "State": self.state,
            "Strategy": self.strategy,
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(self.tags.items())],
        }
        if self.partition_count is not None:
            out["PartitionCount"] = self.partition_count
        return out


def groups(backend: Any) -> dict[str, Group]:
    """This account and region's groups by name (kept on moto's backend, reset with it)."""
    found: dict[str, Group] | None = getattr(backend, "fake_placement_groups", None)
    if found is None:
        found = backend.fake_placement_groups = {}
    return found


def unknown(ref: str) -> AwsError:
    return AwsError("InvalidPlacementGroup.Unknown", f"The Placement Group '{ref}' is unknown.")


def _new_group(resp: Any, name: str, strategy: str) -> Group:
    digest = hashlib.sha256(f"{resp.current_account}/{resp.region}/{name}".encode()).hexdigest()
    arn = f"arn:aws:ec2:{resp.region}:{resp.current_account}:placement-group/{name}"
    tags = resp._parse_tag_specification().get("placement-group", {})
    count = resp._get_param("PartitionCount")
    return Group(name, "pg-" + digest[:17], strategy, arn, dict(tags), count and int(count))


def _validate_create(name: str | None, strategy: str | None, partitions: Any) -> str:
    if not name:
        raise AwsError("MissingParameter", "The request must contain the parameter GroupName")
    if len(name) > NAME_MAX or not name.isascii():
        raise AwsError(
            "InvalidParameterValue",
            f"Value ({name[:40]}...) for parameter groupName is invalid: up to {NAME_MAX}"
            " ASCII characters",
        )
    if strategy not in STRATEGIES:
        raise AwsError(
            "InvalidParameterValue",
            f"Value ({strategy}) for parameter strategy is invalid. Valid values: "
            + ", ".join(STRATEGIES),
        )
    if partitions is not None and strategy != "partition":
        raise AwsError(
            "InvalidParameterCombination", "PartitionCount is only valid with strategy partition"
        )
    return name


def create_placement_group(self: Any) -> Any:
    name = _validate_create(
        self._get_param("GroupName"), self._get_param("Strategy"), self._get_param("PartitionCount")
    )
    self.error_on_dryrun()
    known = groups(self.ec2_backend)
    if name in known:
        raise AwsError(
            "InvalidPlacementGroup.Duplicate", f"The Placement Group '{name}' already exists."
        )
    group = known[name] = _new_group(self, name, str(self._get_param("Strategy")))
    return ActionResult({"PlacementGroup": group.as_dict()})


def _matches(group: Group, name: str, values: list[str]) -> bool:
    simple = {
        "group-name": group.name,
        "group-id": group.group_id,
        "group-arn": group.arn,
        "strategy": group.strategy,
        "state": group.state,
    }
    if name in simple:
        return simple[name] in values
    if name.startswith("tag:"):
        return group.tags.get(name[4:]) in values
    if name == "tag-key":
        return any(k in values for k in group.tags)
    raise AwsError("InvalidParameterValue", f"The filter '{name}' is invalid")


def describe_placement_groups(self: Any) -> Any:
    known = groups(self.ec2_backend)
    names, ids = self._get_param("GroupNames", []), self._get_param("GroupIds", [])
    by_id = {g.group_id: g for g in known.values()}
    for ref in [n for n in names if n not in known] + [i for i in ids if i not in by_id]:
        raise unknown(ref)
    chosen = (
        [known[n] for n in names] + [by_id[i] for i in ids]
        if names or ids
        else sorted(known.values(), key=lambda g: g.name)
    )
    filters = self._filters_from_querystring()
    found = [g for g in chosen if all(_matches(g, k, v) for k, v in filters.items())]
    return ActionResult({"PlacementGroups": [g.as_dict() for g in found]})


def members(backend: Any, group: Group) -> list[Any]:
    """Every instance moto still lists in the group, terminated ones included."""
    return [i for i in backend.all_instances() if i.placement.group_name == group.name]


def delete_placement_group(self: Any) -> Any:
    name = self._get_param("GroupName") or ""
    known = groups(self.ec2_backend)
    group = known.get(name)
    if group is None:
        raise unknown(name)
    inside = members(self.ec2_backend, group)
    live = [i for i in inside if i.state in LIVE]
    state = active()
    lag = state.network.delete_lag if state is not None else 0
    if live or (inside and group.refusals < lag):
        if not live:
            group.refusals += 1
        raise AwsError(
            "InvalidPlacementGroup.InUse",
            f"The placement group '{name}' is in use and may not be deleted.",
        )
    del known[name]
    return EmptyResult()


def resolve(backend: Any, placement: dict[str, Any] | None) -> Group | None:
    """The group a launch names (by name or id), if any; an unknown one fails it."""
    placement = placement or {}
    name, gid = placement.get("GroupName"), placement.get("GroupId")
    if name and gid:
        raise AwsError(
            "InvalidParameterCombination",
            "Placement.GroupName and Placement.GroupId cannot both be specified",
        )
    if not name and not gid:
        return None
    known = groups(backend)
    by_id = {g.group_id: g for g in known.values()}
    found = known.get(str(name)) if name else by_id.get(str(gid))
    if found is None:
        raise unknown(str(name or gid))
    return found


def _live_members(backend: Any, group: Group) -> list[Any]:
    return [i for i in members(backend, group) if i.state in LIVE and i.state != "shutting-down"]


def zone_conflict(
    backend: Any, group: Group, zone: str, *, also: str | None = None
) -> AwsError | None:
    """A cluster group is one AZ: the one its live members (or ``also``: those about to
    launch in the same fleet) are in."""
    if group.strategy != "cluster":
        return None
    zones = {i.placement.zone for i in _live_members(backend, group)} | ({also} if also else set())
    if zones and zone not in zones:
        return AwsError(
            "InvalidPlacementGroup.InUse",
            f"The placement group '{group.name}' is in use in another availability zone:"
            f" {sorted(zones)[0]}",
        )
    return None


def free(state: FakeState, backend: Any, group: Group, instance_type: str) -> int | None:
    """How many more instances of this type the group holds; None when unlimited."""
    limit = state.network.capacity(group.name, instance_type)
    if limit is None:
        return None
    used = sum(1 for i in _live_members(backend, group) if i.instance_type == instance_type)
    return max(0, limit - used)


def check_launch(
    state: FakeState, backend: Any, group: Group, *, zone: str, instance_type: str, count: int
) -> None:
    """Raise what EC2 raises when ``count`` instances cannot go into the group."""
    conflict = zone_conflict(backend, group, zone)
    if conflict is not None:
        raise conflict
    room = free(state, backend, group, instance_type)
    if room is not None and room < count:
        raise insufficient_capacity(instance_type, zone)


def join(group: Group, instances: list[Any]) -> None:
    for inst in instances:
        inst.placement.group_name = group.name
        inst.placement.group_id = group.group_id
    group.refusals = 0


def resource_tags(backend: Any, params: dict[str, str]) -> list[dict[str, str]]:
    """For IAM's ``ec2:ResourceTag``: the tags of the group a call names."""
    names = [v for k, v in params.items() if re.fullmatch(r"GroupName(\.\d+)?", k)]
    known = groups(backend)
    return [known[n].tags if n in known else {} for n in names]


PATCHES: list[tuple[Any, str, Any]] = [
    (EC2Response, "create_placement_group", create_placement_group),
    (EC2Response, "describe_placement_groups", describe_placement_groups),
    (EC2Response, "delete_placement_group", delete_placement_group),
]

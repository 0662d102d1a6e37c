"""DescribeInstanceTopology (moto lacks it), with deterministic network nodes.

Nodes are assigned at launch, three layers top-down, for the types EC2
supports. The members of one cluster placement group share their layer-1 and
layer-2 nodes and fill one bottom-layer node up to the group's node size (the
control API's ``PUT /_fake/topology``; unlimited by default), then spill into
the next one. Any other instance gets bottom and middle nodes of its own.
Only running instances of supported types are listed, so an unsupported type
yields an empty answer. Its throttling bucket (1/s, burst 1) is in ``throttle``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from moto.core.responses import ActionResult
from moto.ec2.responses import EC2Response

from atomic_gang_fakeaws.errors import AwsError
from atomic_gang_fakeaws.placement import Group, groups, members, unknown
from atomic_gang_fakeaws.state import FakeState

# The families EC2 reports topology for (AWS's DescribeInstanceTopology documentation).
SUPPORTED_FAMILIES = frozenset(
    {
        "p3dn",
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "p5en",
        "p6-b200",
        "trn1",
        "trn1n",
        "trn2",
        "trn2u",
        "hpc6a",
        "hpc6id",
        "hpc7a",
        "hpc7g",
        "g6e",
        "g7e",
    }
)
FILTERS = frozenset({"availability-zone", "zone-id", "instance-type"})
MAX_IDS = 100
DEFAULT_PAGE = 20


def supported(instance_type: str) -> bool:
    return instance_type.split(".", 1)[0] in SUPPORTED_FAMILIES


def node_id(*parts: object) -> str:
    return "nn-" + hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:17]


def _slots(state: FakeState, backend: Any, group: Group, new: list[Any]) -> list[int]:
    """Bottom-node slots for the new members: fill the lowest slot with room."""
    size = state.network.size(group.name)
    fresh = {id(i) for i in new}
    taken = Counter(
        getattr(i, "fake_topology_slot", 0)
        for i in members(backend, group)
        if id(i) not in fresh and i.state in ("pending", "running")
    )
    out = []
    for _ in new:
        slot = 0
        while size is not None and taken[slot] >= size:
            slot += 1
        taken[slot] += 1
        out.append(slot)
    return out


def assign(state: FakeState, backend: Any, instances: list[Any], group: Group | None) -> None:
    """Network nodes for freshly launched instances (supported types only)."""
    chosen = [i for i in instances if supported(i.instance_type)]
    if not chosen:
        return
    account = backend.account_id
    if group is not None and group.strategy == "cluster":
        for inst, slot in zip(chosen, _slots(state, backend, group, chosen), strict=True):
            zone = inst.placement.zone
            inst.fake_topology_slot = slot
            inst.fake_network_nodes = (
                node_id(account, zone, "layer1"),
                node_id(account, zone, group.group_id, "layer2"),
                node_id(account, zone, group.group_id, "layer3", slot),
            )
        return
    for inst in chosen:
        zone = inst.placement.zone
        inst.fake_network_nodes = (
            node_id(account, zone, "layer1"),
            node_id(account, zone, inst.id, "layer2"),
            node_id(account, zone, inst.id, "layer3"),
        )


def _wanted(self: Any) -> list[Any]:
    backend = self.ec2_backend
    ids, names = self._get_param("InstanceIds", []), self._get_param("GroupNames", [])
    if ids and names:
        raise AwsError(
            "InvalidParameterCombination", "InstanceIds and GroupNames cannot be used together"
        )
    if len(ids) > MAX_IDS or len(names) > MAX_IDS:
        raise AwsError("InvalidParameterValue", f"at most {MAX_IDS} InstanceIds or GroupNames")
    every = list(backend.all_instances())
    if names:
        known = groups(backend)
        missing = [n for n in names if n not in known]
        if missing:
            raise unknown(missing[0])
        return [i for i in every if i.placement.group_name in names]
    if ids:
        return [i for i in every if i.id in set(ids)]
    return every


def _row(backend: Any, inst: Any, zone_ids: dict[str, str]) -> dict[str, Any]:
    return {
        "InstanceId": inst.id,
        "InstanceType": inst.instance_type,
        "GroupName": inst.placement.group_name or None,
        "NetworkNodes": list(inst.fake_network_nodes),
        "AvailabilityZone": inst.placement.zone,
        "ZoneId": zone_ids.get(inst.placement.zone, ""),
    }


def describe_instance_topology(self: Any) -> Any:
    backend = self.ec2_backend
    filters = self._filters_from_querystring()
    for name in set(filters) - FILTERS:
        raise AwsError("InvalidParameterValue", f"The filter '{name}' is invalid")
    zone_ids = {z.name: z.zone_id for z in backend.describe_availability_zones()}
    rows = []
    for inst in _wanted(self):
        if inst.state != "running" or not getattr(inst, "fake_network_nodes", None):
            continue
        row = _row(backend, inst, zone_ids)
        keyed = {
            "availability-zone": row["AvailabilityZone"],
            "zone-id": row["ZoneId"],
            "instance-type": row["InstanceType"],
        }
        if all(keyed.get(k) in v for k, v in filters.items()):
            rows.append({k: v for k, v in row.items() if v is not None})
    named = self._get_param("InstanceIds") or self._get_param("GroupNames")
    limit = int(self._get_param("MaxResults") or (MAX_IDS if named else DEFAULT_PAGE))
    if not 1 <= limit <= MAX_IDS:
        raise AwsError("InvalidParameterValue", f"MaxResults must be 1-{MAX_IDS}")
    start = int(self._get_param("NextToken") or 0)
    page = rows[start : start + limit]
    out: dict[str, Any] = {"Instances": page}
    if start + limit < len(rows):
        out["NextToken"] = str(start + limit)
    return ActionResult(out)


PATCHES: list[tuple[Any, str, Any]] = [
    (EC2Response, "describe_instance_topology", describe_instance_topology),
]

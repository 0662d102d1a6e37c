"""The layer's network knobs: placement-group capacity and instance topology.

Set through the control API (``PUT /_fake/placement-capacity``, ``PUT
/_fake/topology``, ``PUT /_fake/placement-delete-lag``) and read by
``placement`` and ``topology``. A key of ``DEFAULT`` applies to every group
without a setting of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT = ""


@dataclass
class NetworkKnobs:
    # (group name or DEFAULT, instance type) -> live instances of that type the group holds
    group_capacity: dict[tuple[str, str], int] = field(default_factory=dict)
    # group name or DEFAULT -> instances of the group one bottom-layer network node holds
    node_size: dict[str, int] = field(default_factory=dict)
    # DeletePlacementGroup calls still refused (InUse) once only terminated members are
    # left: EC2 keeps terminated instances, and their hold on the group, for a while.
    delete_lag: int = 0

    def capacity(self, group: str, instance_type: str) -> int | None:
        found = self.group_capacity.get((group, instance_type))
        return self.group_capacity.get((DEFAULT, instance_type)) if found is None else found

    def size(self, group: str) -> int | None:
        found = self.node_size.get(group)
        return self.node_size.get(DEFAULT) if found is None else found

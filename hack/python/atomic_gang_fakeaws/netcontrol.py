"""Control verbs for the network side of the layer: in-process, over HTTP, routes.

* placement capacity: how many instances of a type a group (or, by default,
  every group) holds; a launch that does not fit fails whole;
* topology node size: instances of a cluster group per bottom-layer node;
* delete lag: DeletePlacementGroup calls refused while terminated members linger;
* the EFA self rule: all traffic to and from a security group itself, both
  directions. The dev world's cluster security group has it; tests remove it.
"""

from __future__ import annotations

from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends

from atomic_gang_fakeaws.network import DEFAULT
from atomic_gang_fakeaws.state import FakeState


def _self_pairs(group_id: str) -> dict[str, Any]:
    return {
        "ip_protocol": "-1",
        "from_port": None,
        "to_port": None,
        "ip_ranges": [],
        "source_groups": [{"GroupId": group_id}],
    }


def allow_self(backend: Any, group_id: str) -> None:
    """What EFA needs: all inbound from, and all outbound to, the group itself."""
    backend.authorize_security_group_ingress(group_id, **_self_pairs(group_id))
    backend.authorize_security_group_egress(group_id, **_self_pairs(group_id))


def revoke_self(backend: Any, group_id: str) -> None:
    backend.revoke_security_group_ingress(group_id, **_self_pairs(group_id))
    backend.revoke_security_group_egress(group_id, **_self_pairs(group_id))


class NetworkControl:
    """Mixed into :class:`~atomic_gang_fakeaws.control.FakeAws`."""

    state: FakeState

    def set_placement_capacity(
        self, instance_type: str, count: int | None, *, group: str | None = None
    ) -> None:
        key = (group or DEFAULT, instance_type)
        with self.state.lock:
            if count is None:
                self.state.network.group_capacity.pop(key, None)
            else:
                self.state.network.group_capacity[key] = count

    def set_topology_node_size(self, size: int | None, *, group: str | None = None) -> None:
        with self.state.lock:
            if size is None:
                self.state.network.node_size.pop(group or DEFAULT, None)
            else:
                self.state.network.node_size[group or DEFAULT] = size

    def set_placement_delete_lag(self, calls: int) -> None:
        self.state.network.delete_lag = calls

    def set_self_rule(
        self, group_id: str, *, allowed: bool, region: str, account: str = DEFAULT_ACCOUNT_ID
    ) -> None:
        backend = ec2_backends[account][region]
        with self.state.lock:
            (allow_self if allowed else revoke_self)(backend, group_id)


class NetworkControlClient:
    """Mixed into :class:`~atomic_gang_fakeaws.control.ControlClient`."""

    def _send(self, method: str, path: str, body: Any = None) -> Any:
        raise NotImplementedError

    def set_placement_capacity(
        self, instance_type: str, count: int | None, *, group: str | None = None
    ) -> None:
        where = {"groupName": group} if group else {"default": True}
        self._send(
            "PUT", "/placement-capacity", {**where, "instanceType": instance_type, "count": count}
        )

    def set_topology_node_size(self, size: int | None, *, group: str | None = None) -> None:
        where = {"groupName": group} if group else {"default": True}
        self._send("PUT", "/topology", {**where, "nodeSize": size})

    def set_placement_delete_lag(self, calls: int) -> None:
        self._send("PUT", "/placement-delete-lag", {"calls": calls})

    def set_self_rule(self, group_id: str, *, allowed: bool, region: str) -> None:
        self._send(
            "PUT",
            "/security-group-self-rule",
            {"groupId": group_id, "allowed": allowed, "region": region},
        )


def _group(body: dict[str, Any]) -> str | None:
    """``groupName`` or ``default: true``, exactly one."""
    name, default = body.get("groupName"), body.get("default")
    if bool(name) == bool(default):
        raise ValueError('give exactly one of "groupName" and "default": true')
    return str(name) if name else None


def _optional_int(body: dict[str, Any], key: str) -> int | None:
    value = body[key]
    return None if value is None else int(value)


ROUTES: dict[tuple[str, str], Any] = {
    ("PUT", "/placement-capacity"): lambda f, b, r: f.set_placement_capacity(
        str(b["instanceType"]), _optional_int(b, "count"), group=_group(b)
    ),
    ("PUT", "/topology"): lambda f, b, r: f.set_topology_node_size(
        _optional_int(b, "nodeSize"), group=_group(b)
    ),
    ("PUT", "/placement-delete-lag"): lambda f, b, r: f.set_placement_delete_lag(int(b["calls"])),
    ("PUT", "/security-group-self-rule"): lambda f, b, r: f.set_self_rule(
        str(b["groupId"]), allowed=bool(b["allowed"]), region=str(b["region"])
    ),
}

"""A core/v1 Node: its providerID, taints, Ready condition, allocatable and our labels.

Read on every Node event (``nodes.node_view`` and the Node cache's transform), so
each property is one or two dict lookups. The Node cache's indexes are defined here:
by the instance in its providerID, and by its pool label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.views.base import ObjectView, section


class Node(ObjectView):
    __slots__ = ()

    @property
    def provider_id(self) -> str:
        """spec.providerID (``aws:///us-east-1a/i-0abc``; "" before the cloud sets it)."""
        return str(self.spec.get("providerID", ""))

    @property
    def taints(self) -> Sequence[Mapping[str, Any]]:
        return self.spec.get("taints") or ()

    @property
    def conditions(self) -> Sequence[Mapping[str, Any]]:
        return self.status.get("conditions") or ()

    @property
    def ready_condition(self) -> Mapping[str, Any] | None:
        """The first condition of type Ready (None before the kubelet reports one)."""
        for cond in self.conditions:
            if cond.get("type") == "Ready":
                return cond
        return None

    @property
    def allocatable(self) -> Mapping[str, Any]:
        """status.allocatable: resource name -> quantity (a string such as ``"8"``)."""
        return section(self.status, "allocatable")

    @property
    def pool(self) -> str | None:
        """Our pool label: the GangNodePool this Node belongs to (None on other Nodes)."""
        pool: str | None = self.labels.get(keys.POOL)
        return pool

    @property
    def group(self) -> str | None:
        """Our group label (None when unset)."""
        group: str | None = self.labels.get(keys.GROUP)
        return group


INSTANCE_INDEX = "instance"
POOL_INDEX = "pool"


def instance_id(provider_id: str) -> str:
    """``aws:///us-east-1a/i-0abc`` → ``i-0abc``; anything else → ``""``."""
    if not provider_id.startswith("aws://"):
        return ""
    tail = provider_id.rsplit("/", 1)[-1]
    return tail if tail.startswith("i-") else ""


def instance_index(node: Mapping[str, Any]) -> Iterable[str]:
    """A Node by the EC2 instance id in its providerID."""
    iid = instance_id(Node(node).provider_id)
    return (iid,) if iid else ()


def pool_index(node: Mapping[str, Any]) -> Iterable[str]:
    """A Node by its pool label (a gang Node registers with it)."""
    pool = Node(node).pool
    return (str(pool),) if pool else ()

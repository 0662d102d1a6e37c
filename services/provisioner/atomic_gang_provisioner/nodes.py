"""Read a Node dict into the pool state machine's NodeView (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.cloud.topology import LAYER_LABEL
from atomic_gang_provisioner.pool.model import NodeView
from atomic_gang_provisioner.timestamps import parse_rfc3339

LAYER_PREFIX = LAYER_LABEL.split("{", 1)[0]


def instance_id(provider_id: str) -> str:
    """``aws:///us-east-1a/i-0abc`` → ``i-0abc``; anything else → ``""``."""
    if not provider_id.startswith("aws://"):
        return ""
    tail = provider_id.rsplit("/", 1)[-1]
    return tail if tail.startswith("i-") else ""


def instance_index(node: Mapping[str, Any]) -> Iterable[str]:
    """Index function: a Node by the EC2 instance id in its providerID."""
    iid = instance_id(str((node.get("spec") or {}).get("providerID", "")))
    return (iid,) if iid else ()


def _ready(node: Mapping[str, Any]) -> tuple[bool, datetime | None]:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            since = cond.get("lastTransitionTime")
            when = parse_rfc3339(since) if since else None
            return cond.get("status") == "True", when
    return False, None


def node_view(node: Mapping[str, Any]) -> NodeView | None:
    meta = node.get("metadata") or {}
    iid = instance_id(str((node.get("spec") or {}).get("providerID", "")))
    if not iid:
        return None
    labels = meta.get("labels") or {}
    ready, since = _ready(node)
    if meta.get("deletionTimestamp"):
        ready = False
    return NodeView(
        name=str(meta.get("name", "")),
        instance_id=iid,
        ready=ready,
        ready_since=since,
        pool=labels.get(keys.POOL),
        group=labels.get(keys.GROUP),
        topology_labels=tuple(
            sorted((k, str(v)) for k, v in labels.items() if k.startswith(LAYER_PREFIX))
        ),
    )


def node_read_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a Node update changed what a pool reads of it (its NodeView and pool
    label). A kubelet's heartbeat moves only timestamps: at 800 Nodes, most updates."""
    return _read_of(old) != _read_of(new)


def _read_of(node: Mapping[str, Any]) -> tuple[NodeView | None, object]:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return node_view(node), labels.get(keys.POOL)

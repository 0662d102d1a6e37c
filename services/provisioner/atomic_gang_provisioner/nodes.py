"""Read a Node dict into the pool state machine's NodeView (pure), and what the Node
cache keeps of one (``slim_node``: only what ``node_view`` reads)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from atomic_gang import keys
from atomic_gang.devices import is_extended, whole_quantity
from atomic_gang_provisioner.cloud.network_layers import LAYER_LABEL
from atomic_gang_provisioner.pool.model import NodeCondition, NodeView
from atomic_gang_provisioner.timestamps import parse_rfc3339
from atomic_gang_provisioner.views.node import Node, instance_id

LAYER_PREFIX = LAYER_LABEL.split("{", 1)[0]
# Taints Kubernetes keeps on a Node that cannot take pods yet (or any more): the node
# lifecycle controller removes not-ready a moment after the kubelet reports Ready, the
# cloud controller manager uninitialized once it has set the Node up. A gang's pods
# created while one is left fail to schedule and back off for up to 10 s (kube-scheduler's
# podMaxBackoffSeconds). A cordon (unschedulable) is not one: it leaves running pods be.
NOT_READY_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/network-unavailable",
        "node.cloudprovider.kubernetes.io/uninitialized",
    }
)


def not_ready_taint(node: Mapping[str, Any]) -> bool:
    """The Node still carries a taint that keeps pods off until it can take them."""
    return _not_ready_taint(Node(node))


def _not_ready_taint(node: Node) -> bool:
    return any(
        t.get("key") in NOT_READY_TAINTS and t.get("effect") != "PreferNoSchedule"
        for t in node.taints
    )


def _takes_pods(node: Node, ready: Mapping[str, Any] | None) -> bool:
    """Ready (``ready`` is its Ready condition), not being deleted, and without a taint
    that keeps pods off: what ``NodeView.ready`` says."""
    return (
        ready is not None
        and ready.get("status") == "True"
        and not node.deleting
        and not _not_ready_taint(node)
    )


def node_ready(node: Mapping[str, Any]) -> bool:
    """``node_view(node).ready`` (False for a Node that is no instance of ours), without
    building the view: no timestamp parsed, no devices or labels read. A join check asks
    it of every Node of every other joining gang (``reconcilers/reads.py``): while many
    gangs join, the most frequent read of a Node."""
    seen = Node(node)
    return bool(instance_id(seen.provider_id)) and _takes_pods(seen, seen.ready_condition)


def node_view(node: Mapping[str, Any]) -> NodeView | None:
    return _node_view(Node(node))


def _node_view(seen: Node) -> NodeView | None:
    iid = instance_id(seen.provider_id)
    if not iid:
        return None
    labels = seen.labels
    cond = seen.ready_condition
    since = cond.get("lastTransitionTime") if cond is not None else None
    return NodeView(
        name=seen.name,
        instance_id=iid,
        ready=_takes_pods(seen, cond),
        ready_since=parse_rfc3339(since) if since else None,
        pool=seen.pool,
        group=seen.group,
        topology_labels=tuple(
            sorted((k, str(v)) for k, v in labels.items() if k.startswith(LAYER_PREFIX))
        ),
        devices=_devices(seen),
        conditions=_conditions(seen),
        broken_taint=any(t.get("key") == keys.BROKEN_TAINT for t in seen.taints),
    )


def _conditions(node: Node) -> tuple[NodeCondition, ...]:
    """Every condition but Ready, without its heartbeat: what a health rule may judge."""
    out = []
    for cond in node.conditions:
        kind = cond.get("type")
        if not kind or kind == "Ready":
            continue
        since = cond.get("lastTransitionTime")
        out.append(
            NodeCondition(
                type=str(kind),
                status=str(cond.get("status", "")),
                reason=str(cond.get("reason", ""))[:128],
                since=parse_rfc3339(str(since)) if since else None,
            )
        )
    return tuple(out)


def _devices(node: Node) -> tuple[tuple[str, int], ...]:
    return tuple(
        sorted(
            (name, whole_quantity(qty) or 0)
            for name, qty in node.allocatable.items()
            if is_extended(name)
        )
    )


def slim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a gang Node a pool reads: no managedFields, images, addresses,
    annotations, heartbeat conditions or capacity; its pool, group and network-layer
    labels, providerID, taints, conditions (no heartbeats) and extended allocatable."""
    return _slim(Node(node))


def _slim(seen: Node) -> dict[str, Any]:
    node = seen.raw
    meta, spec = seen.metadata, seen.spec
    identity = ("name", "uid", "resourceVersion", "deletionTimestamp")
    kept = {k: meta[k] for k in identity if k in meta}
    kept["labels"] = {
        k: v
        for k, v in seen.labels.items()
        if k in (keys.POOL, keys.GROUP) or k.startswith(LAYER_PREFIX)
    }
    out: dict[str, Any] = {k: node[k] for k in ("apiVersion", "kind") if k in node}
    out["metadata"] = kept
    out["spec"] = {k: spec[k] for k in ("providerID", "taints") if k in spec}
    kept_fields = ("type", "status", "reason", "lastTransitionTime")
    out["status"] = {
        # Ready and the others (the node monitoring agent's), without heartbeats.
        "conditions": [{k: c[k] for k in kept_fields if k in c} for c in seen.conditions],
        "allocatable": {k: v for k, v in seen.allocatable.items() if is_extended(k)},
    }
    return out


def keep_gang_node(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the Node cache keeps of a Node: a gang Node (one with our pool label: the
    watch's label selector asks for no other) slim, anything else nothing."""
    seen = Node(node)
    if keys.POOL not in seen.labels:
        return None
    return _slim(seen)


def node_read_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a Node update changed what a pool reads of it (its NodeView and pool
    label). A kubelet's heartbeat moves only timestamps: at 800 Nodes, most updates."""
    return _read_of(old) != _read_of(new)


def _read_of(node: Mapping[str, Any]) -> tuple[NodeView | None, object]:
    seen = Node(node)
    return _node_view(seen), seen.pool

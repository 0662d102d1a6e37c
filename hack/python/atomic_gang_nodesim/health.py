"""Holding a simulated Node NotReady, and letting it recover; holding a condition of the
EKS node monitoring agent's (a failed GPU) on it.

kwok re-initialises any Node it manages whose Ready condition is not True, so
the Node is first taken away from kwok (its ``kwok.x-k8s.io/node`` annotation
changes), then its Ready condition is set False. kwok may still be finishing a
heartbeat it started before, so the simulator re-asserts this every tick.
"""

from __future__ import annotations

import contextlib
from typing import Any

from atomic_gang.resources import NODES
from atomic_gang_kubelite import ConflictError, NotFoundError
from atomic_gang_nodesim.kubeapi import NodeApi
from atomic_gang_nodesim.nodes import (
    KWOK_ANNOTATION,
    KWOK_MANAGED,
    KWOK_PAUSED,
    not_ready_condition,
)


def hold_not_ready(kube: NodeApi, name: str, *, now: str) -> None:
    with contextlib.suppress(NotFoundError, ConflictError):
        node = kube.get(NODES, name)
        annotations = node["metadata"].get("annotations") or {}
        if annotations.get(KWOK_ANNOTATION) != KWOK_PAUSED:
            paused = {"metadata": {"annotations": {KWOK_ANNOTATION: KWOK_PAUSED}}}
            node = kube.patch(NODES, name, paused)
        conditions = (node.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is not None and ready.get("status") == "False":
            return
        others = [c for c in conditions if c.get("type") != "Ready"]
        node.setdefault("status", {})["conditions"] = [*others, not_ready_condition(now)]
        kube.replace_status(NODES, node)  # carries resourceVersion: a kwok write in between wins


def hold_condition(kube: NodeApi, name: str, cond: dict[str, Any]) -> None:
    """``cond`` (a Node condition of the node monitoring agent's) on the Node, as the
    agent writes it: beside the kubelet's, one per type. Re-asserted every tick, with the
    same lastTransitionTime, in case a heartbeat wrote the conditions back without it."""
    with contextlib.suppress(NotFoundError, ConflictError):
        node = kube.get(NODES, name)
        conditions = (node.get("status") or {}).get("conditions") or []
        same = next((c for c in conditions if c.get("type") == cond["type"]), None)
        keys = ("status", "reason", "lastTransitionTime")
        if same is not None and all(same.get(k) == cond.get(k) for k in keys):
            return
        others = [c for c in conditions if c.get("type") != cond["type"]]
        node.setdefault("status", {})["conditions"] = [*others, cond]
        kube.replace_status(NODES, node)  # carries resourceVersion: a kwok write in between wins


def release_not_ready(kube: NodeApi, name: str) -> None:
    """Hand the Node back to kwok, which makes it Ready again."""
    with contextlib.suppress(NotFoundError):
        kube.patch(NODES, name, {"metadata": {"annotations": {KWOK_ANNOTATION: KWOK_MANAGED}}})

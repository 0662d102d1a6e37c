"""Holding a simulated Node NotReady, and letting it recover.

kwok re-initialises any Node it manages whose Ready condition is not True, so
the Node is first taken away from kwok (its ``kwok.x-k8s.io/node`` annotation
changes), then its Ready condition is set False. kwok may still be finishing a
heartbeat it started before, so the simulator re-asserts this every tick.
"""

from __future__ import annotations

import contextlib

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


def release_not_ready(kube: NodeApi, name: str) -> None:
    """Hand the Node back to kwok, which makes it Ready again."""
    with contextlib.suppress(NotFoundError):
        kube.patch(NODES, name, {"metadata": {"annotations": {KWOK_ANNOTATION: KWOK_MANAGED}}})

"""Shapes of the raw payloads at this package's boundary.

Kubernetes objects stay plain JSON dicts (``KubeObject``): callers own their
schemas (the GangNodePool models, Kueue's Workload). Only the small envelopes
this package builds or returns itself get a ``TypedDict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

KubeObject = dict[str, Any]
Objects = list[KubeObject]  # an alias: classes below define a method named "list"

WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


class WatchEvent(TypedDict):
    type: WatchEventType
    object: KubeObject


class ObjectReference(TypedDict):
    """core/v1 ObjectReference: what an Event is about."""

    apiVersion: str
    kind: str
    name: str
    namespace: NotRequired[str]
    uid: NotRequired[str]
    resourceVersion: NotRequired[str]


@dataclass(frozen=True, slots=True)
class Listing:
    """Every item of a (paged) list, and the resourceVersion to watch from."""

    items: list[KubeObject]
    resource_version: str


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj["metadata"]`` (an empty dict when absent)."""
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def object_key(obj: Mapping[str, Any]) -> str:
    """client-go's MetaNamespaceKeyFunc: ``namespace/name``, or ``name`` when cluster-scoped."""
    m = meta(obj)
    ns = m.get("namespace")
    return f"{ns}/{m['name']}" if ns else str(m["name"])

"""What every object has: metadata, spec and status, read from the raw dict."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

EMPTY: Mapping[str, Any] = MappingProxyType({})


def section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]``, or an empty mapping when it is absent, null or empty: what
    ``(obj.get(key) or {})`` read (a shared read-only empty, never a new dict)."""
    return obj.get(key) or EMPTY


class ObjectView:
    """A read-only view of one raw Kubernetes object; the dict stays the caller's.

    The three sections are looked up once, when the view is made (three ``get``s):
    every property reads from them, so a view read five times costs less than five
    chains. A view is made where it is read, and not kept.
    """

    __slots__ = ("metadata", "raw", "spec", "status")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.metadata: Mapping[str, Any] = raw.get("metadata") or EMPTY
        self.spec: Mapping[str, Any] = raw.get("spec") or EMPTY
        self.status: Mapping[str, Any] = raw.get("status") or EMPTY

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))

    @property
    def resource_version(self) -> str:
        return str(self.metadata.get("resourceVersion", ""))

    @property
    def generation(self) -> int:
        """metadata.generation (0 when absent: the apiserver sets it on every object)."""
        return int(self.metadata.get("generation") or 0)

    @property
    def labels(self) -> Mapping[str, Any]:
        labels: Mapping[str, Any] = self.metadata.get("labels") or EMPTY
        return labels

    @property
    def annotations(self) -> Mapping[str, Any]:
        annotations: Mapping[str, Any] = self.metadata.get("annotations") or EMPTY
        return annotations

    @property
    def deletion_timestamp(self) -> str | None:
        """When the object was asked to be deleted (None while it is not)."""
        stamp = self.metadata.get("deletionTimestamp")
        return str(stamp) if stamp else None

    @property
    def deleting(self) -> bool:
        return bool(self.metadata.get("deletionTimestamp"))

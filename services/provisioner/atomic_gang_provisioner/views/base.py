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
    """A read-only view of one raw Kubernetes object; the dict stays the caller's."""

    __slots__ = ("raw",)

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    @property
    def metadata(self) -> Mapping[str, Any]:
        return section(self.raw, "metadata")

    @property
    def spec(self) -> Mapping[str, Any]:
        return section(self.raw, "spec")

    @property
    def status(self) -> Mapping[str, Any]:
        return section(self.raw, "status")

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
        return section(self.metadata, "labels")

    @property
    def annotations(self) -> Mapping[str, Any]:
        return section(self.metadata, "annotations")

    @property
    def deletion_timestamp(self) -> str | None:
        """When the object was asked to be deleted (None while it is not)."""
        stamp = self.metadata.get("deletionTimestamp")
        return str(stamp) if stamp else None

    @property
    def deleting(self) -> bool:
        return self.deletion_timestamp is not None

"""Which namespaces may use a pool name.

Pool names are cluster-wide, so a pool belongs to a namespace: the one whose Workload
created it, unless the admin lists the namespaces for the name (``poolNamespaces``:
a name pattern such as ``team-a-*`` and the namespaces that may use it, which then
share it). A listed name is refused to every other namespace, including its first
claimant; an unlisted one only to namespaces other than its owner's.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field, field_validator

from atomic_gang import patterns

MAX_POOL_NAMESPACES = 256


class PoolNamespaces(BaseModel):
    """Pools whose names match ``names`` are for ``namespaces`` only, which share them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    names: str = Field(
        min_length=1,
        max_length=patterns.MAX_POOL_NAME,
        description="A pool name, or a pattern with '*' (team-a-*).",
    )
    namespaces: tuple[str, ...] = Field(min_length=1, max_length=MAX_POOL_NAMESPACES)

    @field_validator("names")
    @classmethod
    def _names(cls, value: str) -> str:
        if not patterns.POOL_NAME_GLOB.match(value):
            raise ValueError(
                f"{value!r} is not a pool name or a pattern of one (lowercase letters, "
                "digits, '-' and '*')"
            )
        return value

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [ns for ns in value if not patterns.RFC1123_LABEL.match(ns) or len(ns) > 63]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a namespace name (an RFC 1123 label)")
        return value


def listed_for(name: str, entries: Iterable[PoolNamespaces]) -> frozenset[str] | None:
    """The namespaces the admin lists for pool ``name`` (the union of every matching
    entry), or None when no entry names it."""
    found: set[str] | None = None
    for entry in entries:
        if fnmatchcase(name, entry.names):
            found = (found or set()) | set(entry.namespaces)
    return None if found is None else frozenset(found)

"""Which GangNodePool a namespace's ``pool`` label names, and who may use it.

A GangNodePool is cluster-scoped, but a ``pool`` label is a namespace's own word: the
same label in two namespaces names two pools, ``<namespace>.<label>`` (``object_name``),
so no namespace can create, claim or squat the pool of another by construction. The
dot cannot occur in a namespace or a label, so the derived names of two namespaces
never meet, nor meet a label. A name longer than 63 characters (the limit of the label
value that carries it to the gang's Nodes, their taint and EC2's tags) keeps the first
26 characters of the namespace and 25 of the label and ends in a hash of the whole.

Sharing is the admin's to grant: a label that ``poolNamespaces`` lists (a name pattern
such as ``team-a-*`` and the namespaces that may use it) names the cluster-wide pool
``<label>``, shared by those namespaces and refused to every other one, its first
claimant included.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from atomic_gang import patterns

MAX_POOL_NAMESPACES = 256
MAX_OBJECT_NAME: Final = 63  # a label value: Nodes carry it (labels, taint), and EC2 tags
SEPARATOR: Final = "."
_NAMESPACE_KEPT: Final = 26  # of a name too long to keep whole: 26 + "." + 25 + "-" + 10
_LABEL_KEPT: Final = 25
_DIGEST: Final = 10


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


def object_name(label: str, namespace: str, entries: Iterable[PoolNamespaces]) -> str:
    """The GangNodePool that ``namespace``'s ``pool`` label names: ``<label>`` where the
    admin lists it (shared), else ``<namespace>.<label>`` (see the module's docstring)."""
    if listed_for(label, entries) is not None:
        return label
    return namespaced_name(label, namespace)


def namespaced_name(label: str, namespace: str) -> str:
    """``<namespace>.<label>``, or within 63 characters with a hash of the whole. Each
    part of a kept prefix ends in a letter or digit, as an object name's parts must."""
    whole = f"{namespace}{SEPARATOR}{label}"
    if len(whole) <= MAX_OBJECT_NAME:
        return whole
    digest = hashlib.sha256(whole.encode()).hexdigest()[:_DIGEST]
    ns = namespace[:_NAMESPACE_KEPT].rstrip("-")
    kept = label[:_LABEL_KEPT].rstrip("-")
    return f"{ns}{SEPARATOR}{kept}-{digest}"


def namespaced(name: str) -> bool:
    """Whether a GangNodePool's name is one ``namespaced_name`` made (a listed label's,
    or a pool's from before names were per namespace, has no dot)."""
    return SEPARATOR in name

"""Each object as last written by this process, until the informer's copy catches up.

The pool reconciler remembers every pool status it writes and every Node it labels,
the Workload reconciler every check it applies. The informer may not have delivered
that write yet, and deciding from the older cached copy would go wrong: a step redone
(or undone), a Satisfied pool seen by the Workload side only after the watch, a check
applied at a superseded resourceVersion (a sure conflict), a Node labelled twice.
etcd resourceVersions are increasing integers, so the newer copy is the one to trust.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from atomic_gang_provisioner.kube.objects import meta, object_key
from atomic_gang_provisioner.views.base import ObjectView

KEPT = 10_000  # writes remembered, newest kept: one forgotten costs an extra reconcile


class Cache(Protocol):
    def get(self, key: str) -> Mapping[str, Any] | None: ...


def _rv(obj: Mapping[str, Any]) -> int:
    raw = ObjectView(obj).resource_version
    return int(raw) if raw.isascii() and raw.isdigit() else -1


class LatestWrites:
    """Reads through an informer's cache, keyed as it is (``namespace/name`` or ``name``)."""

    def __init__(
        self, cache: Cache, *, slim: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    ) -> None:
        self._cache = cache
        self._slim = slim  # what the cache keeps of an object: so is a write kept
        # Bounded, oldest out first: an object deleted before it was read again (a Node
        # of a released gang) would otherwise be kept for ever.
        self._written: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._last: OrderedDict[str, int] = OrderedDict()  # key -> rv of our last write
        self._lock = threading.Lock()

    def newest(self, key: str) -> dict[str, Any] | None:
        """The newest copy we know of the object at ``key``: our own write while the
        watch has not brought it, else the cache's; None once the cache has none."""
        cached = self._cache.get(key)
        if cached is None:  # deleted: the cache is the truth
            with self._lock:
                self._written.pop(key, None)
                self._last.pop(key, None)
            return None
        return self._newer(key, cached)

    def newer(self, cached: Mapping[str, Any]) -> dict[str, Any]:
        """Our write of this cached object if it is the newer copy, else the cached one
        (an object found through an index rather than by key)."""
        return self._newer(object_key(cached), cached)

    def _newer(self, key: str, cached: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            mine = self._written.get(key)
            if mine is not None and _rv(mine) > _rv(cached):
                return mine
            self._written.pop(key, None)
        return dict(cached)

    def remember(self, written: dict[str, Any]) -> None:
        """Keep the apiserver's answer to our write (the whole object it stored)."""
        if meta(written).get("name"):  # a whole object, not an echoed patch body
            key = object_key(written)
            if self._slim is not None:
                written = self._slim(written)
            with self._lock:
                self._written[key] = written
                self._last[key] = _rv(written)
                for kept in (self._written, self._last):
                    kept.move_to_end(key)
                    while len(kept) > KEPT:
                        kept.popitem(last=False)

    def echoes(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """Whether a watch update only brings our own last write (a new version, and the
        one our write returned): what it says, the writer already acted on. A resync
        (the same version again) is never an echo."""
        rv = _rv(new)
        with self._lock:
            return rv != _rv(old) and rv >= 0 and self._last.get(object_key(new)) == rv

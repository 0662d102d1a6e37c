"""Each object as last written by this process, until the informer's copy catches up.

The pool reconciler remembers every pool status it writes and every Node it labels,
the Workload reconciler every check it applies. The informer may not have delivered that write yet:
deciding from the older cached copy would redo (or undo) a step, the Workload side
would see a Satisfied pool only after the watch, and a check applied with the
cached (older) resourceVersion would conflict and back off, and a Node whose
label patch the cache has not seen would be patched again at N Ready. etcd resourceVersions
are increasing integers, so the newer of the two copies is the one to trust.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol

KEPT = 10_000  # writes remembered, newest kept: one forgotten costs an extra reconcile


class Cache(Protocol):
    def get(self, key: str) -> Mapping[str, Any] | None: ...


def _key(obj: Mapping[str, Any]) -> str:
    """client-go's MetaNamespaceKeyFunc (the informers' keys); "" without a name."""
    meta = obj.get("metadata") or {}
    name, ns = str(meta.get("name") or ""), meta.get("namespace")
    return f"{ns}/{name}" if ns and name else name


def _rv(obj: Mapping[str, Any]) -> int:
    raw = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    return int(raw) if raw.isascii() and raw.isdigit() else -1


class LatestWrites:
    """Reads through an informer's cache, keyed as it is (``namespace/name`` or ``name``)."""

    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        # Bounded, oldest out first: an object deleted before it was read again (a Node
        # of a released gang) would otherwise be kept for ever.
        self._written: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._last: OrderedDict[str, int] = OrderedDict()  # key -> rv of our last write
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        cached = self._cache.get(key)
        if cached is None:  # deleted: the cache is the truth
            with self._lock:
                self._written.pop(key, None)
                self._last.pop(key, None)
            return None
        return self.newer(cached)

    def newer(self, cached: Mapping[str, Any]) -> dict[str, Any]:
        """Our write of this cached object if it is the newer copy, else the cached one
        (an object found through an index rather than by key)."""
        key = _key(cached)
        with self._lock:
            mine = self._written.get(key)
            if mine is not None and _rv(mine) > _rv(cached):
                return mine
            self._written.pop(key, None)
        return dict(cached)

    def remember(self, written: dict[str, Any]) -> None:
        """Keep the apiserver's answer to our write (the whole object it stored)."""
        if key := _key(written):
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
            return rv != _rv(old) and rv >= 0 and self._last.get(_key(new)) == rv

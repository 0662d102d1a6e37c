"""Each object as last written by this process, until the informer's copy catches up.

The pool reconciler remembers every pool status it writes, the Workload reconciler
every check it applies. The informer may not have delivered that write yet:
deciding from the older cached copy would redo (or undo) a step, the Workload side
would see a Satisfied pool only after the watch, and a check applied with the
cached (older) resourceVersion would conflict and back off. etcd resourceVersions
are increasing integers, so the newer of the two copies is the one to trust.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

from atomic_gang_provisioner.kube import object_key


class Cache(Protocol):
    def get(self, key: str) -> Mapping[str, Any] | None: ...


def _rv(obj: Mapping[str, Any]) -> int:
    raw = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    return int(raw) if raw.isascii() and raw.isdigit() else -1


class LatestWrites:
    """Reads through an informer's cache, keyed as it is (``namespace/name`` or ``name``)."""

    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        self._written: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        cached = self._cache.get(key)
        with self._lock:
            mine = self._written.get(key)
            if cached is None:  # deleted: the cache is the truth
                self._written.pop(key, None)
                return None
            if mine is not None and _rv(mine) > _rv(cached):
                return mine
            self._written.pop(key, None)
            return dict(cached)

    def remember(self, written: dict[str, Any]) -> None:
        with self._lock:
            self._written[object_key(written)] = written

"""Each pool as last written by this process, until the informer's copy catches up.

The pool reconciler remembers every status it writes. The informer may not have
delivered that write yet: deciding from the older cached copy would redo (or undo)
a step, and the Workload side would see a Satisfied pool only after the watch.
Both reconcilers read pools here; etcd resourceVersions are increasing integers,
so the newer of the two copies is the one to trust.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol


class PoolCache(Protocol):
    def get(self, key: str) -> Mapping[str, Any] | None: ...


def _rv(obj: Mapping[str, Any]) -> int:
    raw = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    return int(raw) if raw.isascii() and raw.isdigit() else -1


class LatestPools:
    def __init__(self, cache: PoolCache) -> None:
        self._cache = cache
        self._written: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> dict[str, Any] | None:
        cached = self._cache.get(name)
        with self._lock:
            mine = self._written.get(name)
            if cached is None:  # deleted: the cache is the truth
                self._written.pop(name, None)
                return None
            if mine is not None and _rv(mine) > _rv(cached):
                return mine
            self._written.pop(name, None)
            return dict(cached)

    def remember(self, written: dict[str, Any]) -> None:
        name = str((written.get("metadata") or {}).get("name", ""))
        with self._lock:
            self._written[name] = written

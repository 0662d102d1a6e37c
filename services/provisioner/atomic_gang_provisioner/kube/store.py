"""The informer's cache: objects by key, plus named secondary indices.

An index function maps an object to the values it is found under (none, one or
several), e.g. a Node under its ``spec.providerID``; ``by_index`` answers "which
objects have this value" without a scan. Objects are shared, not copied:
treat everything returned as read-only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from atomic_gang_provisioner.kube.objects import KubeObject, Objects, meta

IndexFunc = Callable[[KubeObject], Iterable[str]]
Updates = list[tuple[KubeObject, KubeObject]]
Keys = list[str]


class Store:
    """A thread-safe ``key -> object`` map with indices."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, KubeObject] = {}
        self._indexers = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}
        self._values: dict[str, dict[str, tuple[str, ...]]] = {n: {} for n in self._indexers}

    def get(self, key: str) -> KubeObject | None:
        with self._lock:
            return self._items.get(key)

    def list(self) -> Objects:
        with self._lock:
            return list(self._items.values())

    def by_index(self, index: str, value: str) -> Objects:
        with self._lock:
            return [self._items[k] for k in sorted(self._indices[index].get(value, ()))]

    def upsert(self, key: str, obj: KubeObject) -> KubeObject | None:
        """Store ``obj``; return what it replaced."""
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._reindex(key, obj)
            return old

    def remove(self, key: str) -> KubeObject | None:
        with self._lock:
            old = self._items.pop(key, None)
            self._reindex(key, None)
            return old

    def replace(self, objects: Mapping[str, KubeObject]) -> tuple[Objects, Updates, Objects]:
        """Swap in a full list; return (added, updated as (old, new), deleted)."""
        added: Objects = []
        updated: Updates = []
        with self._lock:
            gone = [k for k in self._items if k not in objects]
            deleted = [old for k in gone if (old := self.remove(k)) is not None]
            for key, obj in objects.items():
                old = self.upsert(key, obj)
                if old is None:
                    added.append(obj)
                elif _rv(old) != _rv(obj):
                    updated.append((old, obj))
        return added, updated, deleted

    def _reindex(self, key: str, obj: KubeObject | None) -> None:
        for name, fn in self._indexers.items():
            index, values = self._indices[name], self._values[name]
            for v in values.pop(key, ()):
                keys = index[v]
                keys.discard(key)
                if not keys:
                    del index[v]
            if obj is None:
                continue
            new = tuple(dict.fromkeys(fn(obj)))
            if new:
                values[key] = new
                for v in new:
                    index.setdefault(v, set()).add(key)


def _rv(obj: KubeObject) -> Any:
    return meta(obj).get("resourceVersion")


def by_label(label: str) -> IndexFunc:
    """Index by the value of one label."""

    def fn(obj: KubeObject) -> Iterable[str]:
        value = (meta(obj).get("labels") or {}).get(label)
        return () if value is None else (str(value),)

    return fn


def by_owner_uid(*, controller_only: bool = False, kind: str | None = None) -> IndexFunc:
    """Index by ownerReferences[].uid (e.g. Workloads by their Job's UID)."""

    def fn(obj: KubeObject) -> Iterable[str]:
        return tuple(
            str(ref["uid"])
            for ref in meta(obj).get("ownerReferences") or ()
            if "uid" in ref
            and (not controller_only or ref.get("controller"))
            and (kind is None or ref.get("kind") == kind)
        )

    return fn

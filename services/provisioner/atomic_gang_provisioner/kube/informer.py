"""A list+watch cache of raw dicts with handlers: our own small SharedInformer.

One thread lists (paged, consistent), then watches from the list's
resourceVersion with bookmarks, resuming from the last seen version whenever a
stream ends. ``410 GoneError`` (HTTP or in-stream) means that version was compacted:
relist and diff against the cache, so handlers still see every add, update and
delete. Other failures back off (jittered, capped) and resume. Handlers run on
the informer's threads, serialised, and must only enqueue keys.

A ``transform``, as client-go's, is applied to every listed and watched object before
the store: it returns what to keep of it, or None for an object this cache is not
for. Such an object never reaches the store; a stored one that turns into one leaves
it as a delete. ``relist`` starts over from a fresh list, for when what the transform
keeps has changed.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from atomic_gang.resources import Resource
from atomic_gang_provisioner.backoff import exponential
from atomic_gang_provisioner.callbacks import call_guarded
from atomic_gang_provisioner.kube.api_errors import GoneError, KubeError
from atomic_gang_provisioner.kube.client import KubeClient, WatchStream
from atomic_gang_provisioner.kube.objects import KubeObject, Objects, WatchEvent, meta, object_key
from atomic_gang_provisioner.kube.store import IndexFunc, Store

log = logging.getLogger(__name__)
_rng = random.Random()  # noqa: S311 - jitter, not secrets


RESYNC_SLICES = 10
Transform = Callable[[KubeObject], KubeObject | None]


def resync_slice(obj: KubeObject) -> int:
    return zlib.crc32(object_key(obj).encode()) % RESYNC_SLICES


@dataclass(frozen=True, slots=True, kw_only=True)
class Handlers:
    """Callbacks for cache changes; ``on_update`` gets (old, new)."""

    on_add: Callable[[KubeObject], None] | None = None
    on_update: Callable[[KubeObject, KubeObject], None] | None = None
    on_delete: Callable[[KubeObject], None] | None = None

    @classmethod
    def for_all(cls, fn: Callable[[KubeObject], None]) -> Handlers:
        """One callback for every change (the newest object), e.g. ``enqueue(key(obj))``."""
        return cls(on_add=fn, on_update=lambda _old, new: fn(new), on_delete=fn)


@dataclass(slots=True)
class InformerStats:
    lists: int = 0
    watches: int = 0
    gone: int = 0
    bookmarks: int = 0
    events: int = 0
    errors: int = 0
    resyncs: int = 0


class Informer:
    """Keeps ``store`` equal to the server's view of one resource (and selectors)."""

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        page_size: int = 500,
        resync_seconds: float = 0.0,
        watch_timeout_seconds: int = 300,
        backoff_base_seconds: float = 0.8,
        backoff_cap_seconds: float = 30.0,
    ) -> None:
        self.client, self.resource = client, resource
        self.name = f"informer-{resource.plural}"
        self._handler = f"{self.name}: handler"
        self.store = Store(indexers)
        self.stats = InformerStats()
        self.namespace = namespace
        self._labels, self._fields = label_selector, field_selector
        self._transform = transform
        self._page_size = page_size  # what a list holds at once, before the transform
        self._relist_asked = threading.Event()
        self._resync = resync_seconds
        self._watch_timeout = watch_timeout_seconds
        self._backoff = (backoff_base_seconds, backoff_cap_seconds)
        self._handlers: list[Handlers] = []
        self._dispatch = threading.RLock()  # serialises handler calls across threads
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._stream_lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._threads: list[threading.Thread] = []
        self.resource_version = ""

    # -- reading the cache -------------------------------------------------------
    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def get(self, key: str) -> KubeObject | None:
        return self.store.get(key)

    def list(self) -> Objects:
        return self.store.list()

    def by_index(self, index: str, value: str) -> Objects:
        return self.store.by_index(index, value)

    # -- lifecycle ---------------------------------------------------------------
    def add_handlers(self, handlers: Handlers) -> None:
        """Register handlers; once synced, they first get ``on_add`` for every cached object."""
        with self._dispatch:
            self._handlers.append(handlers)
            if self._synced.is_set() and handlers.on_add is not None:
                for obj in self.store.list():
                    self._call(handlers.on_add, obj)

    def start(self) -> None:
        if self._threads:
            raise RuntimeError(f"{self.name} already started")
        self._threads.append(threading.Thread(target=self._run, name=self.name, daemon=True))
        if self._resync > 0:
            t = threading.Thread(target=self._resync_loop, name=f"{self.name}-resync", daemon=True)
            self._threads.append(t)
        for t in self._threads:
            t.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._close_stream()
        for t in self._threads:
            t.join(timeout)

    def relist(self) -> None:
        """End the watch and list again (the transform keeps something else now):
        objects it now keeps arrive as adds, those it drops leave as deletes."""
        self._relist_asked.set()
        self._close_stream()

    def _close_stream(self) -> None:
        with self._stream_lock:
            stream = self._stream
        if stream is not None:
            stream.close()

    # -- the list/watch loop -----------------------------------------------------
    def _run(self) -> None:
        rv = ""
        failures = 0
        while not self._stop.is_set():
            try:
                if not rv or self._relist_asked.is_set():
                    self._relist_asked.clear()
                    rv = self._relist()
                rv, events, seconds = self._watch(rv)
                if self._relist_asked.is_set():
                    failures = 0
                    continue
                failures = 0 if events or seconds >= 1.0 else failures + 1
            except GoneError as exc:
                self.stats.gone += 1
                log.info("%s: %s; relisting", self.name, exc.message)
                failures = failures + 1 if not rv else 0  # the list itself expired: back off
                rv = ""
            except KubeError as exc:
                failures += 1
                self.stats.errors += 1
                log.warning("%s: %s (attempt %d)", self.name, exc, failures)
            except Exception:
                failures += 1
                self.stats.errors += 1
                log.exception("%s: unexpected failure (attempt %d)", self.name, failures)
            if failures:
                self._stop.wait(self._delay(failures))

    def _delay(self, failures: int) -> float:
        base, cap = self._backoff
        return exponential(failures - 1, base=base, cap=cap, spread=0.5, draw=_rng.random())

    def _relist(self) -> str:
        listing = self.client.list(
            self.resource,
            namespace=self.namespace,
            label_selector=self._labels,
            field_selector=self._fields,
            page_size=self._page_size,
            keep=self._transform,
        )
        self.stats.lists += 1
        fresh = {object_key(o): o for o in listing.items}
        with self._dispatch:
            added, updated, deleted = self.store.replace(fresh)
            self.resource_version = listing.resource_version
            self._synced.set()
            for h in list(self._handlers):
                for obj in added:
                    self._call(h.on_add, obj)
                for old, new in updated:
                    self._call(h.on_update, old, new)
                for obj in deleted:
                    self._call(h.on_delete, obj)
        return listing.resource_version

    def _watch(self, rv: str) -> tuple[str, int, float]:
        """Follow one watch stream; return (last resourceVersion, events, seconds)."""
        started, events = time.monotonic(), 0
        timeout = int(self._watch_timeout * (1.0 + _rng.random()))
        stream = self.client.watch(
            self.resource,
            resource_version=rv,
            namespace=self.namespace,
            label_selector=self._labels,
            field_selector=self._fields,
            timeout_seconds=timeout,
        )
        self.stats.watches += 1
        with stream, self._published(stream):
            for event in stream:
                if self._stop.is_set() or self._relist_asked.is_set():
                    break
                events += 1
                rv = self._apply(event) or rv
                self.resource_version = rv
        return rv, events, time.monotonic() - started

    @contextlib.contextmanager
    def _published(self, stream: WatchStream) -> Iterator[None]:
        """Let ``stop`` and ``relist`` close ``stream`` from another thread while we read it."""
        with self._stream_lock:
            self._stream = stream
        try:
            if self._stop.is_set() or self._relist_asked.is_set():
                stream.close()
            yield
        finally:
            with self._stream_lock:
                self._stream = None

    def _apply(self, event: WatchEvent) -> str | None:
        kind, obj = event["type"], event["object"]
        if kind == "BOOKMARK":
            self.stats.bookmarks += 1
            return meta(obj).get("resourceVersion")
        self.stats.events += 1
        key = object_key(obj)
        if self._transform is not None:
            kept = self._transform(obj)
            if kept is None:  # not for this cache: gone from it, if it was there
                self._left(key)
                return meta(obj).get("resourceVersion")
            obj = kept
        with self._dispatch:
            if kind == "DELETED":
                old = self.store.remove(key)
                for h in list(self._handlers):
                    self._call(h.on_delete, old if old is not None else obj)
            else:
                old = self.store.upsert(key, obj)
                for h in list(self._handlers):
                    if old is None:
                        self._call(h.on_add, obj)
                    else:
                        self._call(h.on_update, old, obj)
        return meta(obj).get("resourceVersion")

    def _left(self, key: str) -> None:
        with self._dispatch:
            old = self.store.remove(key)
            if old is not None:
                for h in list(self._handlers):
                    self._call(h.on_delete, old)

    def _resync_loop(self) -> None:
        """Each object once per period, spread over the period in slices (by a hash of
        its key), so a resync never enqueues every object at one instant."""
        tick = 0
        while not self._stop.wait(self._resync / RESYNC_SLICES):
            if not self._synced.is_set():
                continue
            part, tick = tick % RESYNC_SLICES, tick + 1
            with self._dispatch:
                self.stats.resyncs += part == 0  # a period begins
                for obj in self.store.list():
                    if resync_slice(obj) != part:
                        continue
                    for h in list(self._handlers):
                        self._call(h.on_update, obj, obj)

    def _call(self, fn: Callable[..., None] | None, *args: KubeObject) -> None:
        call_guarded(fn, *args, log=log, what=self._handler)

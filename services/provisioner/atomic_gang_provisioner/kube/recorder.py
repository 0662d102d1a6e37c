"""Kubernetes Events (core/v1) about our objects, aggregated like client-go's recorder.

The same (object, type, reason, message) seen again bumps ``count`` and
``lastTimestamp`` on the Event already written instead of creating another, so
a reconcile loop repeating itself costs one PATCH, not a new object. Writing
happens on a background thread: a reconcile never waits for an Event, and a
failed or dropped Event is logged, never raised (events are best effort).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from atomic_gang.resources import EVENTS
from atomic_gang_provisioner.events import EventType
from atomic_gang_provisioner.kube.api_errors import KubeError, NotFoundError
from atomic_gang_provisioner.kube.client import KubeClient
from atomic_gang_provisioner.kube.objects import KubeObject, ObjectReference, meta
from atomic_gang_provisioner.timestamps import rfc3339

log = logging.getLogger(__name__)
MAX_MESSAGE = 1024
# Where Events about cluster-scoped objects (GangNodePools, Nodes) go: they name every
# team's claimants, instance ids and shapes, and tenants can read "default", the only
# other namespace the apiserver allows for them. Each claimant's own Job and Workload
# get the Events that concern it, in its namespace.
CLUSTER_EVENTS_NAMESPACE = "kube-system"
_AggKey = tuple[str, str, str, str, str, str, str]


def reference(obj: KubeObject) -> ObjectReference:
    """The ObjectReference of a full object (apiVersion, kind, name, namespace, uid)."""
    m = meta(obj)
    ref: ObjectReference = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": m["name"]}
    if m.get("namespace"):
        ref["namespace"] = m["namespace"]
    if m.get("uid"):
        ref["uid"] = m["uid"]
    return ref


@dataclass(slots=True)
class _Seen:
    name: str
    namespace: str
    count: int


@dataclass(frozen=True, slots=True)
class _Pending:
    ref: ObjectReference
    type: EventType
    reason: str
    message: str
    at: dt.datetime


class EventRecorder:
    """``event(obj, type=..., reason=..., message=...)``; written asynchronously."""

    def __init__(
        self,
        client: KubeClient,
        *,
        component: str,
        host: str = "",
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        cache_size: int = 4096,
        queue_size: int = 1000,
    ) -> None:
        self._client, self._component, self._host, self._now = client, component, host, now
        self._seen: OrderedDict[_AggKey, _Seen] = OrderedDict()
        self._cache_size = cache_size
        self._queue: queue.Queue[_Pending | threading.Event | None] = queue.Queue(queue_size)
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()
        self.dropped = 0

    def event(
        self, obj: KubeObject | ObjectReference, *, type: EventType, reason: str, message: str
    ) -> None:
        """Record an Event about ``obj`` (a full object or an ObjectReference)."""
        ref = reference(cast(KubeObject, obj)) if "metadata" in obj else cast(ObjectReference, obj)
        item = _Pending(ref, type, reason, message[:MAX_MESSAGE], self._now())
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            log.warning("event queue full; dropped %s %s", reason, ref.get("name"))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every Event recorded so far has been written (or failed)."""
        done = threading.Event()
        self._queue.put(done, timeout=timeout)
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, then stop the writer thread."""
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                self._write(item)
            except KubeError as exc:
                log.warning("event %s on %s not written: %s", item.reason, item.ref["name"], exc)
            except Exception:
                log.exception("event %s on %s not written", item.reason, item.ref["name"])

    def _write(self, p: _Pending) -> None:
        ref = p.ref
        key: _AggKey = (
            ref.get("namespace", ""),
            ref["kind"],
            ref["name"],
            ref.get("uid", ""),
            p.type,
            p.reason,
            p.message,
        )
        stamp = rfc3339(p.at)
        seen = self._seen.get(key)
        if seen is not None:
            try:
                self._client.patch(
                    EVENTS,
                    seen.name,
                    {"count": seen.count + 1, "lastTimestamp": stamp},
                    namespace=seen.namespace,
                )
                seen.count += 1
                self._seen.move_to_end(key)
                return
            except NotFoundError:
                del self._seen[key]  # expired (events have a TTL): start a new one
        self._create(key, p, stamp)

    def _create(self, key: _AggKey, p: _Pending, stamp: str) -> None:
        ns = p.ref.get("namespace") or CLUSTER_EVENTS_NAMESPACE
        name = f"{p.ref['name']}.{time.time_ns():x}"
        # The apiserver takes an Event about a cluster-scoped object only in "default",
        # or in "kube-system" when it carries eventTime and action (an Event of the
        # events.k8s.io shape, written through core/v1).
        scoped: KubeObject = (
            {} if p.ref.get("namespace") else {"eventTime": micro_time(p.at), "action": p.reason}
        )
        body: KubeObject = {
            **scoped,
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": dict(p.ref),
            "reason": p.reason,
            "message": p.message,
            "type": p.type,
            "source": {"component": self._component, "host": self._host},
            "reportingComponent": self._component,
            "reportingInstance": self._host or self._component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        self._client.create(EVENTS, body)
        self._seen[key] = _Seen(name=name, namespace=ns, count=1)
        if len(self._seen) > self._cache_size:
            self._seen.popitem(last=False)


def micro_time(at: dt.datetime) -> str:
    """A MicroTime (``eventTime``): RFC 3339 with microseconds, in UTC."""
    return at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

"""Fakes of the reconcilers' narrow interfaces: caches, an HTTP-level recording
transport under the real ``KubeClient`` and an event sink; the cloud roles are a
``tests.support.fakecloud.FakeCloud`` (by default one that must not be called).
Recording below ``KubeClient`` checks the wire request (path, query, content type,
body), not just which method a reconciler called."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from atomic_gang import GangSettings
from atomic_gang_provisioner.events import EventType
from atomic_gang_provisioner.kube.api_errors import KubeError
from atomic_gang_provisioner.kube.client import KubeClient
from atomic_gang_provisioner.kube.objects import KubeObject
from atomic_gang_provisioner.kube.store import IndexFunc, Store
from atomic_gang_provisioner.kube.transport import Query, Transport
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.reconcilers.context import Context
from atomic_gang_provisioner.views.pool_object import POOL_INDEXERS
from tests.support.fakecloud import FakeCloud
from tests.support.pools import KNOBS, T0


class FakeCache(Store):
    """An informer's read side, filled by the test."""

    def __init__(
        self, objects: Sequence[KubeObject] = (), indexers: Mapping[str, IndexFunc] | None = None
    ) -> None:
        super().__init__(indexers)
        for obj in objects:
            m = obj["metadata"]
            key = f"{m['namespace']}/{m['name']}" if m.get("namespace") else str(m["name"])
            self.upsert(key, obj)

    def has_synced(self) -> bool:
        return True


@dataclass(frozen=True)
class Sent:
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    body: Any
    content_type: str


class RecordingTransport(Transport):
    """Answers every request with its own body (or a queued error) and records it."""

    def __init__(self) -> None:
        super().__init__(api_client=None)
        self.sent: list[Sent] = []
        self.errors: dict[tuple[str, str], KubeError] = {}

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Any:
        self.sent.append(Sent(method, path, tuple(query), body, content_type))
        err = self.errors.get((method, path))
        if err is not None:
            raise err
        return body

    def close(self) -> None:
        return None

    def writes(self) -> list[Sent]:
        return [s for s in self.sent if s.method in {"POST", "PUT", "PATCH", "DELETE"}]


@dataclass
class RecordingEvents:
    seen: list[tuple[str, str, str]] = field(default_factory=list)  # (object name, reason, msg)

    def event(self, obj: Any, *, type: EventType, reason: str, message: str) -> None:
        self.seen.append((str(obj["metadata"]["name"]), reason, message))


def context(
    *,
    settings: GangSettings,
    transport: RecordingTransport,
    events: RecordingEvents | None = None,
    pools: FakeCache | None = None,
    workloads: FakeCache | None = None,
    jobs: FakeCache | None = None,
    checks: FakeCache | None = None,
    leading: Callable[[], bool] = lambda: True,
    now: Callable[[], datetime] = lambda: T0,
    cloud: FakeCloud | None = None,
) -> Context:
    """A reconcile context; ``cloud`` plays every cloud role (default: ``FakeCloud.unused()``)."""
    cloud = cloud or FakeCloud.unused()
    return Context(
        client=KubeClient(transport),
        pools=pools or FakeCache([], POOL_INDEXERS),
        workloads=workloads or FakeCache(),
        nodes=FakeCache(),
        jobs=jobs or FakeCache(),
        checks=checks or FakeCache(),
        flavors=FakeCache(),
        launcher=cloud,
        observer=cloud,
        janitor=cloud,
        settings=settings,
        knobs=KNOBS,
        events=events or RecordingEvents(),
        metrics=ProvisionerMetrics.create(),
        leading=leading,
        now=now,
    )

"""Fakes of the reconcilers' narrow interfaces: caches, an HTTP-level recording
transport under the real ``KubeClient``, an event sink, and a cloud that must not
be called. Recording below ``KubeClient`` checks the wire request (path, query,
content type, body), not just which method a reconciler called."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from atomic_gang import GangSettings
from atomic_gang_provisioner.caches import POOL_INDEXERS
from atomic_gang_provisioner.cloud.types import (
    AcquireRequest,
    AcquireResult,
    Instance,
    PlacementGroup,
    ReleaseRequest,
    ReleaseResult,
    TopologyRead,
)
from atomic_gang_provisioner.events import EventType
from atomic_gang_provisioner.kube.client import KubeClient
from atomic_gang_provisioner.kube.errors import KubeError
from atomic_gang_provisioner.kube.store import IndexFunc, Store
from atomic_gang_provisioner.kube.transport import Query, Transport
from atomic_gang_provisioner.kube.types import KubeObject
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.reconcilers.context import Context
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


class NoCloud:
    """Every cloud role (``cloud.roles.Cloud``), for a test whose code never talks to
    EC2: any call fails the test."""

    def _no(self, *_: Any, **__: Any) -> Any:
        raise AssertionError("the cloud was called")

    def acquire(self, request: AcquireRequest) -> AcquireResult:
        return self._no(request)  # type: ignore[no-any-return]

    def find(self, *, pool: str, generation: int) -> tuple[Instance, ...]:
        return self._no(pool, generation)  # type: ignore[no-any-return]

    def describe_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = (), reuse: bool = False
    ) -> Future[tuple[Instance, ...]]:
        return self._no(instance_ids)  # type: ignore[no-any-return]

    def reported_unhealthy(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        return ()  # a read of answers recorded earlier, not a call: none recorded here

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        return self._no(request)  # type: ignore[no-any-return]

    def tag(self, instance_ids: Sequence[str], tags: Mapping[str, str]) -> None:
        self._no(instance_ids, tags)

    def list_owned(self) -> tuple[Instance, ...]:
        return self._no()  # type: ignore[no-any-return]

    def forget_pool(self, pool: str) -> None:
        self._no(pool)

    def prune_templates(self) -> tuple[str, ...]:
        return self._no()  # type: ignore[no-any-return]

    def recover_enis(self) -> tuple[str, ...]:
        return self._no()  # type: ignore[no-any-return]

    def delete_placement_group(self, pool: str) -> bool:
        return self._no(pool)  # type: ignore[no-any-return]

    def list_placement_groups(self) -> tuple[PlacementGroup, ...]:
        return self._no()  # type: ignore[no-any-return]

    def reap_placement_group(self, name: str) -> bool:
        return self._no(name)  # type: ignore[no-any-return]

    def read_topology_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = ()
    ) -> Future[TopologyRead]:
        return self._no(instance_ids)  # type: ignore[no-any-return]

    def warm_up(self) -> None:
        self._no()


def answered(value: Any) -> Future[Any]:
    """A Future that already holds ``value`` (an exception is raised by ``result()``)."""
    done: Future[Any] = Future()
    if isinstance(value, BaseException):
        done.set_exception(value)
    else:
        done.set_result(value)
    return done


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
) -> Context:
    return Context(
        client=KubeClient(transport),
        pools=pools or FakeCache([], POOL_INDEXERS),
        workloads=workloads or FakeCache(),
        nodes=FakeCache(),
        jobs=jobs or FakeCache(),
        checks=checks or FakeCache(),
        flavors=FakeCache(),
        launcher=NoCloud(),
        observer=NoCloud(),
        janitor=NoCloud(),
        settings=settings,
        knobs=KNOBS,
        events=events or RecordingEvents(),
        metrics=ProvisionerMetrics.create(),
        leading=leading,
        now=now,
    )

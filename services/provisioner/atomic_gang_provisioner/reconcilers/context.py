"""Everything a reconciler needs, built once by the manager."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from atomic_gang import GangSettings
from atomic_gang_provisioner.cloud.roles import Janitor, Launcher, Observer
from atomic_gang_provisioner.events import EventType
from atomic_gang_provisioner.kube.client import KubeClient
from atomic_gang_provisioner.kube.objects import KubeObject
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.pool.model import Knobs
from atomic_gang_provisioner.views.admission_check import our_check_names


class Cache(Protocol):
    """The read side of an informer."""

    def get(self, key: str) -> KubeObject | None: ...
    def list(self) -> Iterable[KubeObject]: ...
    def by_index(self, index: str, value: str) -> Iterable[KubeObject]: ...
    def has_synced(self) -> bool: ...


class EventSink(Protocol):
    def event(self, obj: Any, *, type: EventType, reason: str, message: str) -> None: ...


class NotLeaderError(RuntimeError):
    """This replica lost the lease: no write may follow."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Faults:
    """Crash points the e2e tests switch on (main reads them from the environment):
    ``crash_after_launch`` dies between "EC2 returned" and "status persisted", as a
    SIGKILL would. Off unless asked for."""

    crash_after_launch: bool = False

    def after_launch(self) -> None:
        if self.crash_after_launch:
            os._exit(137)


@dataclass
class CloudHealth:
    """The last verdict of each cloud probe (``cluster``: the EKS cluster and its
    subnets resolve; ``ec2``: the reaper's listing works); '' means healthy."""

    probes: dict[str, str] = field(default_factory=dict)
    on_change: Callable[[], None] = lambda: None

    @property
    def error(self) -> str:
        return "; ".join(f"{k}: {v}" for k, v in sorted(self.probes.items()) if v)

    def failing(self, probe: str) -> bool:
        return bool(self.probes.get(probe))

    def report(self, error: str, *, probe: str = "ec2") -> None:
        before = self.error
        self.probes[probe] = error
        if self.error != before:
            self.on_change()


@dataclass
class Context:
    client: KubeClient
    pools: Cache
    workloads: Cache
    nodes: Cache
    jobs: Cache
    checks: Cache
    flavors: Cache
    # The one engine, by role: the pool reconcile launches and observes, the reaper sweeps.
    launcher: Launcher
    observer: Observer
    janitor: Janitor
    settings: GangSettings
    knobs: Knobs
    events: EventSink
    metrics: ProvisionerMetrics
    leading: Callable[[], bool] = lambda: True
    now: Callable[[], datetime] = _utcnow
    faults: Faults = field(default_factory=Faults)
    cloud_health: CloudHealth = field(default_factory=CloudHealth)
    # The gang owners beside Jobs, by plural ("jobsets", "trainjobs"): only the kinds the
    # apiserver served at start-up (an owner of another kind is read by a GET).
    owners: Mapping[str, Cache] = field(default_factory=dict)

    def must_lead(self) -> None:
        if not self.leading():
            raise NotLeaderError("lost the leader lease; refusing to write")

    def our_checks(self) -> frozenset[str]:
        """Names of AdmissionChecks whose controllerName is ours."""
        return our_check_names(self.checks.list(), self.settings.controller_name)

"""The values of the Workload decision: what it reads (``Inputs``) and what it asks
the reconciler to do (``WorkloadPlan``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from atomic_gang import GangSettings
from atomic_gang_provisioner.api import Claim, GangNodePool, PoolShape
from atomic_gang_provisioner.events import Event
from atomic_gang_provisioner.workload.owners import JudgedOwner
from atomic_gang_provisioner.workload.view import WorkloadView

State = Literal["Pending", "Ready", "Retry", "Rejected"]
Claimant = Literal["active", "inactive", "absent"]
MAX_MESSAGE = 32000


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckUpdate:
    name: str
    state: State
    message: str
    last_transition_time: str
    pod_set_updates: tuple[dict[str, Any], ...] = ()
    requeue_after_seconds: int | None = None
    event: Event | None = None  # the transition's Gang<State> Event, emitted after the write


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecChange:
    """A merge patch of a pool's spec, guarded by its resourceVersion."""

    pool: str
    resource_version: str
    claim: Claim | None
    keep_warm_ttl: str | None = None
    min_runtime: str | None = None  # written with keep_warm_ttl: all three are the claimant's
    repair: str | None = None  # "never", or None for auto (clears the previous claimant's)
    shape: PoolShape | None = None
    owner_namespace: str | None = None  # the namespace to record as the pool's owner


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    wl: WorkloadView
    our_checks: frozenset[str]
    owner: JudgedOwner | None  # the Job, JobSet or TrainJob Kueue made the Workload for
    # Why the owner could not be read when ``owner`` is None ("": it was read and is
    # not there, or the Workload names no owner).
    owner_error: str = ""
    pool: GangNodePool | None
    claimant: Claimant = "absent"
    flavor_labels: Mapping[str, str] = field(default_factory=dict)
    # The Workload's ResourceFlavors that select gang nodes or tolerate the gang taint.
    claiming_flavors: frozenset[str] = frozenset()
    settings: GangSettings
    now: datetime
    retry_seconds: int = 30  # Retry of a Workload whose pool another one uses
    failed_retry_seconds: int  # Retry of a Workload whose pool gave up on it


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadPlan:
    create_pool: GangNodePool | None = None
    spec_change: SpecChange | None = None
    checks: tuple[CheckUpdate, ...] = ()
    pool_events: tuple[Event, ...] = ()  # emitted once the pool write succeeded
    requeue_after: float | None = None

    @property
    def events(self) -> tuple[Event, ...]:
        """Every Event of the plan, in the order they are emitted."""
        return self.pool_events + tuple(c.event for c in self.checks if c.event is not None)

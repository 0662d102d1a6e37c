"""The values of the Workload decision: what it reads (``Inputs``) and what it asks
the reconciler to do (``WorkloadPlan``), plus ``set_check``, the one way to change our
AdmissionCheckState: it writes only on a change and emits an Event on a transition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from atomic_gang import GangSettings
from atomic_gang_provisioner.api import Claim, GangNodePool, PoolShape
from atomic_gang_provisioner.events import Event, event
from atomic_gang_provisioner.timestamps import rfc3339
from atomic_gang_provisioner.workload.view import CheckState, WorkloadView

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
    min_runtime: str | None = None  # written with keep_warm_ttl: both are the claimant's
    shape: PoolShape | None = None
    owner_namespace: str | None = None  # the namespace to record as the pool's owner


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    wl: WorkloadView
    our_checks: frozenset[str]
    owner: Mapping[str, Any] | None  # the Job or JobSet Kueue made the Workload for
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


def set_check(
    inp: Inputs,
    current: CheckState,
    state: State,
    message: str,
    *,
    pod_set_updates: tuple[dict[str, Any], ...] = (),
    requeue_after_seconds: int | None = None,
) -> WorkloadPlan:
    """Write our entry only if something changed; emit an event on a state change.

    ``requeueAfterSeconds`` is compared only where we set it: after a Retry, Kueue's
    reset to Pending keeps the value under its own field manager, so an entry without it
    still shows it, and comparing there would re-send every later apply."""
    message = (message + attempt_note(current, state))[:MAX_MESSAGE]
    same = (
        current.state == state
        and current.message == message
        and tuple(current.pod_set_updates) == pod_set_updates
        and (
            requeue_after_seconds is None or current.requeue_after_seconds == requeue_after_seconds
        )
    )
    if same:
        return WorkloadPlan()
    moved = current.state != state
    update = CheckUpdate(
        name=current.name,
        state=state,
        message=message,
        last_transition_time=("" if moved else current.last_transition_time) or rfc3339(inp.now),
        pod_set_updates=pod_set_updates,
        requeue_after_seconds=requeue_after_seconds,
        event=event(f"Gang{state}", message, warning=state in ("Retry", "Rejected"))
        if moved
        else None,
    )
    return WorkloadPlan(checks=(update,))


def attempt_note(current: CheckState, state: State) -> str:
    """ " (attempt 3 after 2 evictions)" on the Pending and Ready messages of a Workload
    that Kueue requeued after our Retry (its ``retryCount``); "" on a first attempt."""
    n = current.retry_count
    if n <= 0 or state not in ("Pending", "Ready"):
        return ""
    return f" (attempt {n + 1} after {n} eviction{'s' if n > 1 else ''})"

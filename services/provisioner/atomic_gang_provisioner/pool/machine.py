"""Dispatch on the phase, chain immediate transitions, keep conditions current.

``decide`` runs the current phase; when it moves to another phase without an
action pending (e.g. Idle → Acquiring), the next phase runs in the same
reconcile. A cloud call that follows a phase change (launch, terminate) waits
one quick round trip until the new phase is persisted (write-ahead). ``after_acquire``
and ``after_release`` turn a cloud result into the status to write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool, Phase
from atomic_gang_provisioner.cloud.types import AcquireRequest, AcquireResult, ReleaseResult
from atomic_gang_provisioner.pool import outcomes, report
from atomic_gang_provisioner.pool.model import (
    DeleteGroup,
    FindByTag,
    Knobs,
    Launch,
    Observed,
    Plan,
    Terminate,
    has_resources,
    update,
    with_status,
)
from atomic_gang_provisioner.pool.phases import (
    acquiring,
    degraded,
    idle,
    joining,
    keepwarm,
    releasing,
    satisfied,
)
from atomic_gang_provisioner.timestamps import parse_rfc3339

Decide = Callable[[GangNodePool, Observed, datetime], Plan]
PHASES: dict[Phase, Decide] = {
    "Idle": idle.decide,
    "Acquiring": acquiring.decide,
    "Joining": joining.decide,
    "Satisfied": satisfied.decide,
    "KeepWarm": keepwarm.decide,
    "Releasing": releasing.decide,
    "Degraded": degraded.decide,
}
MAX_HOPS = 4
WRITE_AHEAD_REQUEUE = 0.01


def _finalize(pool: GangNodePool, observed: Observed) -> Plan:
    status = pool.status
    if status.phase == "Acquiring" and not has_resources(status):
        if observed.found is None:  # a lost launch response may have left a set
            return Plan(status=status, read=FindByTag(status.acquireGeneration))
        if observed.found:
            status = update(status, instanceIds=[i.instance_id for i in observed.found])
    if has_resources(status):
        n = len(status.instanceIds)
        first = pool.status.phase != "Releasing"  # one event, not one per ENI poll
        return Plan(
            status=update(status, phase="Releasing"),
            call=Terminate(releasing.request(pool, status)),
            outcomes=(outcomes.Finalizing(instances=n),) if first else (),
        )
    if status.placementGroup:  # the pool's own group goes last, before the finalizer
        return Plan(status=status, call=DeleteGroup())
    return Plan(status=status, remove_finalizer=True)


def seed_generation(pool: GangNodePool, now: datetime) -> GangNodePool:
    """A new pool starts its generations at the millisecond it is first decided on.

    ClientTokens stay valid at EC2 long after termination, so a pool deleted and
    created again under the same name must never derive a token it used before. A
    predecessor's generations count up from its own first decision by one an attempt,
    each attempt a round trip (far over 1 ms), so they all lie below any later
    millisecond. Creation times are no seed: they have whole seconds, and a pool can
    be launched, deleted and created again inside one (its successor then replayed
    the first set's token). The creation time stays a floor, against a clock behind
    the apiserver's. No set can exist at an unwritten seed (launches wait until
    Acquiring at the generation is stored), so a lost first write may seed again.
    """
    s = pool.status
    if s.observedGeneration or s.activeGeneration or s.acquireGeneration != 1:
        return pool
    stamp = pool.metadata.get("creationTimestamp")
    start = max(now, parse_rfc3339(str(stamp))) if stamp else now
    seeded = update(s, acquireGeneration=max(1, int(start.timestamp() * 1000)))
    return with_status(pool, seeded)


def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
    pool = seed_generation(pool, now)
    if pool.deleting:
        final = _finalize(pool, observed)
        if _needs_write_ahead(pool.status.phase, final):
            final = _write_ahead(final)
        return _with_conditions(pool, final, now, observed.knobs)
    plan = Plan(status=pool.status)
    current = pool
    for _ in range(MAX_HOPS):
        step = PHASES[current.status.phase](current, observed, now)
        if _needs_write_ahead(pool.status.phase, step):
            plan = plan.then(_write_ahead(step))
            break
        plan = plan.then(step)
        moved = step.status.phase != current.status.phase
        if _acts(step) or not moved:
            break
        current = with_status(current, step.status)
    return _with_conditions(pool, plan, now, observed.knobs)


def _acts(step: Plan) -> bool:
    """The step asks for I/O: the executor performs it and decides again (or writes)."""
    return step.call is not None or step.read is not None


def _needs_write_ahead(stored: Phase, step: Plan) -> bool:
    """A cloud call that a phase change leads to waits until that phase is persisted.

    Acquire: launch only once "Acquiring at generation G" is stored, so a crash after
    EC2 answered always leaves a status that looks for the set. Release: terminate only
    once Releasing (or Degraded) is stored, so the transition is visible and a crash
    mid-termination resumes releasing the recorded set.
    """
    if not isinstance(step.call, Launch | Terminate):
        return False
    return step.status.phase != stored


def _write_ahead(step: Plan) -> Plan:
    return replace(step, call=None, requeue_after=WRITE_AHEAD_REQUEUE)


def after_acquire(
    pool: GangNodePool,
    plan: Plan,
    *,
    request: AcquireRequest,
    result: AcquireResult,
    now: datetime,
    knobs: Knobs,
) -> Plan:
    step = acquiring.after_acquire(
        pool, plan.status, request=request, result=result, now=now, knobs=knobs
    )
    return _with_conditions(pool, plan.then(step), now, knobs)


def after_release(
    pool: GangNodePool, plan: Plan, *, result: ReleaseResult, now: datetime, knobs: Knobs
) -> Plan:
    step = releasing.after_release(pool, plan.status, result=result, now=now, knobs=knobs)
    return _with_conditions(pool, plan.then(step), now, knobs)


def after_delete_group(
    pool: GangNodePool, plan: Plan, *, deleted: bool, knobs: Knobs, now: datetime
) -> Plan:
    """The pool's own placement group: gone, or still counted in use by EC2 (terminated
    instances linger there a while): not an error, ask again after the release poll."""
    if not deleted:
        return _with_conditions(pool, replace(plan, requeue_after=knobs.release_poll), now, knobs)
    name = plan.status.placementGroup
    step = Plan(
        status=update(plan.status, placementGroup=""),
        remove_finalizer=pool.deleting,
        outcomes=(outcomes.GroupDeleted(name=name),),
    )
    return _with_conditions(pool, plan.then(step), now, knobs)


def _with_conditions(pool: GangNodePool, plan: Plan, now: datetime, knobs: Knobs) -> Plan:
    return replace(plan, status=report.refresh(pool, plan.status, knobs=knobs, now=now))

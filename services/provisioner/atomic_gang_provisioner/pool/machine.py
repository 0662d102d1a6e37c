"""Which story a reconcile tells: the phase's own, or the finalizer's for a deleted pool.

A phase's story may end by going on in another phase (:class:`story.Next`: a claim on an
Idle pool is acquired for at once, a joined gang is watched as Satisfied); the next
phase's story then runs in the same reconcile, and no phase runs twice in one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool, Phase
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import (
    Observed,
    has_resources,
    lookups_lag_until,
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
    repairing,
    satisfied,
)
from atomic_gang_provisioner.pool.story import End, FindByTag, Part, Story, ask
from atomic_gang_provisioner.timestamps import parse_rfc3339

PHASES: dict[Phase, Callable[[GangNodePool, Observed, datetime], Story]] = {
    "Idle": idle.story,
    "Acquiring": acquiring.story,
    "Joining": joining.story,
    "Satisfied": satisfied.story,
    "Repairing": repairing.story,
    "KeepWarm": keepwarm.story,
    "Releasing": releasing.story,
    "Degraded": degraded.story,
}


class PhaseLoopError(RuntimeError):
    """A story went on into a phase that already ran in this reconcile (a bug)."""


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Part[End]:
    """The whole reconcile's story: the finalizer's, or the phases' from the stored one."""
    pool = seed_generation(pool, now)
    if pool.deleting:
        return (yield from finalize(pool, observed, now))
    ran: list[Phase] = []
    while True:
        ran.append(pool.status.phase)
        ending = yield from PHASES[pool.status.phase](pool, observed, now)
        if isinstance(ending, End):
            return ending
        pool = with_status(pool, ending.status)
        if pool.status.phase in ran:
            raise PhaseLoopError(f"pool {pool.name}: {' → '.join(ran)} → {pool.status.phase}")


def finalize(pool: GangNodePool, observed: Observed, now: datetime) -> Part[End]:
    """The pool is deleted: its instances go (a lost launch's too), then its own placement
    group, then the finalizer."""
    status = pool.status
    if status.phase == "Acquiring" and not has_resources(status):
        # A lost launch response may have left a set.
        found = yield from ask(FindByTag(status.acquireGeneration))
        if found:
            status = update(status, instanceIds=[i.instance_id for i in found])
        unsure_until = lookups_lag_until(status, observed.knobs)
        if not found and unsure_until is not None and now < unsure_until:
            # Not believed yet: EC2's tag lookups lag a launch of unknown outcome.
            wait = (unsure_until - now).total_seconds()
            return End(status=status, requeue_after=min(wait, observed.knobs.release_poll * 2))
    if has_resources(status):
        if pool.status.phase != "Releasing":  # one event, not one per ENI poll
            yield outcomes.Finalizing(instances=len(status.instanceIds))
        releasing_now = update(status, phase="Releasing")
        return (yield from releasing.terminate(pool, releasing_now, knobs=observed.knobs, now=now))
    if status.placementGroup:  # the pool's own group goes last, before the finalizer
        return (yield from idle.delete_group(pool, status, observed))
    return End(status=status, remove_finalizer=True)


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

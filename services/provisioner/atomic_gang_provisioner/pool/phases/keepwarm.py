"""KeepWarm: no claim; the formed set waits for the next claimant until
``keepWarmUntil`` (mirrored to an EC2 tag so the reaper enforces it after a
restart). A new claim reuses the set with no launch and clears the window, unless the
set's Capacity Block has less time left than the claimant needs."""

from __future__ import annotations

from datetime import datetime

from atomic_gang import keys
from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import (
    Observed,
    Plan,
    TagRequest,
    claim_key,
    seconds_until,
    update,
)
from atomic_gang_provisioner.pool.phases import releasing
from atomic_gang_provisioner.pool.rules import block, health


def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
    verdict = health.check(pool, observed, now)
    first = health.forced(pool, verdict, on_loss=releasing.begin)
    if first is not None:
        return first
    if claim_key(pool):
        short = block.too_short_for(pool, verdict.status, now, observed.knobs)
        if short:  # never start what cannot finish: the claimant acquires afresh
            return releasing.begin(pool, verdict.status, reason=short[0], message=short[1])
        return _reuse(pool, verdict.status, now)
    status = verdict.status
    if status.keepWarmUntil is None or now >= status.keepWarmUntil:
        return releasing.begin_quietly(
            pool,
            status,
            reason="KeepWarmExpired",
            message="The keep-warm window ended; releasing the warm set",
        )
    wait = seconds_until(status.keepWarmUntil, now)
    if verdict.wait is not None:
        wait = min(wait or verdict.wait, verdict.wait)
    return Plan(status=status, requeue_after=wait)


def _reuse(pool: GangNodePool, status: GangNodePoolStatus, now: datetime) -> Plan:
    """A claim on the warm set: Satisfied at once, no launch, no join."""
    key = claim_key(pool)
    claim = pool.spec.claim
    who = f"{claim.namespace}/{claim.name}" if claim else key
    ids = tuple(status.instanceIds)
    return Plan(
        status=update(status, phase="Satisfied", claimKey=key, keepWarmUntil=None, satisfiedAt=now),
        tag=TagRequest(instance_ids=ids, tags=((keys.KEEP_WARM_UNTIL, ""),)),
        outcomes=(outcomes.KeepWarmReused(nodes=len(ids), claimant=who),),
    )

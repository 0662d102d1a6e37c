"""Satisfied: the gang exists. Watch its health and its Capacity Block's end; hand it
to keep-warm when the claim drops; degrade it (claimant gets Retry, set released) when
it breaks, and drain it (claimant gets Retry) at its block's drain point."""

from __future__ import annotations

from datetime import datetime

from atomic_gang import GoDuration, keys
from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import Knobs, Observed, Plan, TagRequest, claim_key, update
from atomic_gang_provisioner.pool.phases import degraded, releasing
from atomic_gang_provisioner.pool.rules import block, health
from atomic_gang_provisioner.timestamps import rfc3339


def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
    verdict = health.check(pool, observed, now)
    first = health.forced(pool, verdict, on_loss=degraded.enter)
    if first is not None:
        return first
    status, uid = verdict.status, claim_key(pool)
    if uid:
        if uid != status.claimKey:
            status = update(status, claimKey=uid)
        if block.draining(status, now, observed.knobs):
            return degraded.drain(pool, status, now=now, knobs=observed.knobs)
        return block.watch(Plan(status=status, requeue_after=verdict.wait), now, observed.knobs)
    return _keep_warm(pool, status, now, observed.knobs)


def _keep_warm(pool: GangNodePool, status: GangNodePoolStatus, now: datetime, knobs: Knobs) -> Plan:
    """The claim dropped: keep the set for keep-warm-ttl, never past its block's drain
    point; or release it."""
    ttl = GoDuration.parse(pool.spec.keepWarmTTL)
    until = now + ttl.to_timedelta()
    drain = block.drain_point(status, knobs)
    if drain is not None:
        until = min(until, drain)
    if until <= now:
        zero = ttl.nanoseconds <= 0
        why = "keep-warm is 0s" if zero else f"{status.reservationId} is past its drain point"
        return releasing.begin_quietly(
            pool,
            status,
            reason="Released" if zero else block.ENDING,
            message=f"The claim was released and {why}",
        )
    ids, when = tuple(status.instanceIds), rfc3339(until)
    return Plan(
        status=update(status, phase="KeepWarm", keepWarmUntil=until, claimKey=""),
        tag=TagRequest(instance_ids=ids, tags=((keys.KEEP_WARM_UNTIL, when),)),
        outcomes=(outcomes.KeptWarm(nodes=len(ids), until=when, ttl=str(ttl)),),
        requeue_after=(until - now).total_seconds(),
    )

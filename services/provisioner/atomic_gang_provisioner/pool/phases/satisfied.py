"""Satisfied: the gang exists. Watch its health and its Capacity Block's end; hand it
to keep-warm when the claim drops; repair it in place when nodes break (or, past the
repair limits, degrade it: claimant gets Retry, set released), and drain it (claimant
gets Retry) at its block's drain point."""

from __future__ import annotations

from datetime import datetime

from atomic_gang import GoDuration, keys
from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import Observed, claim_key, update
from atomic_gang_provisioner.pool.phases import degraded, releasing, repairing
from atomic_gang_provisioner.pool.rules import block, health
from atomic_gang_provisioner.pool.story import Next, Story, TagInstances
from atomic_gang_provisioner.timestamps import rfc3339


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    verdict = yield from health.check(pool, observed, now)
    status, uid = verdict.status, claim_key(pool)
    if verdict.broken:  # replaced in place, or the whole set goes (repairing.begin)
        return (yield from repairing.begin(pool, verdict, observed=observed, now=now))
    if not uid:
        return (yield from _keep_warm(pool, status, observed, now))
    if uid != status.claimKey:
        status = update(status, claimKey=uid)
    if block.draining(status, now, observed.knobs):
        return (yield from degraded.drain(pool, status, knobs=observed.knobs))
    return (
        yield from block.watch(status, requeue_after=verdict.wait, now=now, knobs=observed.knobs)
    )


def _keep_warm(
    pool: GangNodePool, status: GangNodePoolStatus, observed: Observed, now: datetime
) -> Story:
    """The claim dropped: keep the set for keep-warm-ttl, never past its block's drain
    point; or release it."""
    ttl = GoDuration.parse(pool.spec.keepWarmTTL)
    until = now + ttl.to_timedelta()
    drain = block.drain_point(status, observed.knobs)
    if drain is not None:
        until = min(until, drain)
    if until <= now:
        zero = ttl.nanoseconds <= 0
        why = "keep-warm is 0s" if zero else f"{status.reservationId} is past its drain point"
        return (
            yield from releasing.begin_quietly(
                pool,
                status,
                reason="Released" if zero else block.ENDING,
                message=f"The claim was released and {why}",
                observed=observed,
                now=now,
            )
        )
    ids, when = tuple(status.instanceIds), rfc3339(until)
    yield TagInstances(instance_ids=ids, tags=((keys.KEEP_WARM_UNTIL, when),))
    yield outcomes.KeptWarm(nodes=len(ids), until=when, ttl=str(ttl))
    return Next(update(status, phase="KeepWarm", keepWarmUntil=until, claimKey=""))

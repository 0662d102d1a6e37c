"""Satisfied: the gang exists. Watch its health and its Capacity Block's end; hand it
to keep-warm when the claim drops; degrade it (claimant gets Retry, set released) when
it breaks, and drain it (claimant gets Retry) at its block's drain point."""

from __future__ import annotations

from datetime import datetime

from atomic_gang import GoDuration, keys
from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.events import event
from atomic_gang_provisioner.pool.model import Observed, Plan, TagRequest, claim_key, update
from atomic_gang_provisioner.pool.phases import block, degraded, health, releasing
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
        plan = Plan(status=status, requeue_after=verdict.wait)
        return block.watch(pool, plan, now, observed.knobs)
    ttl = GoDuration.parse(pool.spec.keepWarmTTL)
    if ttl.nanoseconds <= 0:
        return releasing.begin(
            pool,
            status,
            reason="Released",
            warning=False,
            message="The claim was released and keep-warm is 0s",
        )
    until = now + ttl.to_timedelta()
    drain = block.drain_point(status, observed.knobs)
    if drain is not None and drain <= until:  # a warm set never outlives its block
        if drain <= now:
            return releasing.begin(
                pool,
                status,
                reason=block.ENDING,
                warning=False,
                message=f"The claim was released past the drain point of {status.reservationId}",
            )
        until = drain
    ids, when = tuple(status.instanceIds), rfc3339(until)
    return Plan(
        status=update(status, phase="KeepWarm", keepWarmUntil=until, claimKey=""),
        tag=TagRequest(instance_ids=ids, tags=((keys.KEEP_WARM_UNTIL, when),)),
        events=(
            event(
                "KeepWarm",
                f"The claim was released; keeping {len(ids)} nodes warm until {when} ({ttl})",
            ),
        ),
        requeue_after=ttl.total_seconds(),
    )

"""Degraded: a formed gang lost a member while claimed, or its Capacity Block drains.

The set is released at once (never run a partial gang), the claimant's check
goes to Retry (the Workload reconciler reads ``degradedClaimKey``), and the
pool stays here until Kueue has evicted that claimant, so a fresh gang is only
acquired for a fresh claim. A drained block's set is kept until the claim drops
(Kueue evicted the pods) or ``block.release_by``, then released.
"""

from __future__ import annotations

from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import (
    Knobs,
    Observed,
    claim_key,
    has_resources,
    update,
)
from atomic_gang_provisioner.pool.phases import releasing
from atomic_gang_provisioner.pool.rules import block
from atomic_gang_provisioner.pool.story import End, Next, Story


def _marked(
    status: GangNodePoolStatus, key: str, *, reason: FailureReason, message: str
) -> GangNodePoolStatus:
    return update(
        status,
        phase="Degraded",
        claimKey=key,  # the claim the Degraded condition speaks for
        degradedClaimKey=key,
        lastErrorReason=reason,
        lastError=message,
        unhealthySince=None,
        repair=None,
    )


def drain(pool: GangNodePool, status: GangNodePoolStatus, *, knobs: Knobs) -> Story:
    """At its Capacity Block's drain point: Retry for the claimant (Kueue evicts it), the
    set held for its pods' grace until ``block.release_by``."""
    message = block.drain_message(status, knobs)
    yield outcomes.BlockDrain(message=message)
    return Next(_marked(status, claim_key(pool), reason=block.ENDING, message=message))


def enter(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    *,
    reason: FailureReason,
    message: str,
    observed: Observed,
    now: datetime,
) -> Story:
    """The formed gang broke: Retry for the claimant, and the whole set goes."""
    key = claim_key(pool)
    if not key:
        return (
            yield from releasing.begin(
                pool, status, reason=reason, message=message, observed=observed, now=now
            )
        )
    yield outcomes.Degraded(message=message)
    new = _marked(status, key, reason=reason, message=message)
    return (yield from releasing.terminate(pool, new, knobs=observed.knobs, now=now))


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    status = pool.status
    if has_resources(status):
        hold = block.holding(pool, status, now, observed.knobs)
        if hold:  # a drained block: its evicted pods stop gracefully first
            return End(status=status, requeue_after=hold)
        return (yield from releasing.terminate(pool, status, knobs=observed.knobs, now=now))
    key = claim_key(pool)
    if key and key == status.degradedClaimKey:
        return End(status=status)  # waiting for Kueue to evict the claimant
    return Next(update(status, phase="Idle", degradedClaimKey="", claimKey=""))

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
    Plan,
    Terminate,
    claim_key,
    has_resources,
    seconds_until,
    update,
)
from atomic_gang_provisioner.pool.phases import releasing
from atomic_gang_provisioner.pool.rules import block


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
    )


def drain(pool: GangNodePool, status: GangNodePoolStatus, *, now: datetime, knobs: Knobs) -> Plan:
    """At its Capacity Block's drain point: Retry for the claimant (Kueue evicts it), the
    set held for its pods' grace until ``block.release_by``."""
    message = block.drain_message(status, knobs)
    new = _marked(status, claim_key(pool), reason=block.ENDING, message=message)
    return Plan(
        status=new,
        outcomes=(outcomes.BlockDrain(message=message),),
        requeue_after=seconds_until(block.release_by(new, knobs), now),
    )


def enter(
    pool: GangNodePool, status: GangNodePoolStatus, *, reason: FailureReason, message: str
) -> Plan:
    key = claim_key(pool)
    if not key:
        return releasing.begin(pool, status, reason=reason, message=message)
    new = _marked(status, key, reason=reason, message=message)
    return Plan(
        status=new,
        call=Terminate(releasing.request(pool, new)),
        outcomes=(outcomes.Degraded(message=message),),
    )


def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
    status = pool.status
    if has_resources(status):
        hold = block.holding(pool, status, now, observed.knobs)
        if hold:  # a drained block: its evicted pods stop gracefully first
            return Plan(status=status, requeue_after=hold)
        return Plan(status=status, call=Terminate(releasing.request(pool, status)))
    key = claim_key(pool)
    if key and key == status.degradedClaimKey:
        return Plan(status=status)  # waiting for Kueue to evict the claimant
    return Plan(status=update(status, phase="Idle", degradedClaimKey="", claimKey=""))

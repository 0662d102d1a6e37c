"""Degraded: a formed gang lost a member while claimed.

The set is released at once (never run a partial gang), the claimant's check
goes to Retry (the Workload reconciler reads ``degradedClaimKey``), and the
pool stays here until Kueue has evicted that claimant, so a fresh gang is only
acquired for a fresh claim.
"""

from __future__ import annotations

from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.events import event
from atomic_gang_provisioner.pool.model import Observed, Plan, claim_key, has_resources, update
from atomic_gang_provisioner.pool.phases import releasing


def enter(pool: GangNodePool, status: GangNodePoolStatus, *, reason: str, message: str) -> Plan:
    uid = claim_key(pool)
    if not uid:
        return releasing.begin(pool, status, reason=reason, message=message)
    new = update(
        status,
        phase="Degraded",
        claimKey=uid,  # the claim the Degraded condition speaks for
        degradedClaimKey=uid,
        lastErrorReason=reason,
        lastError=message,
        unhealthySince=None,
    )
    text = f"Gang degraded: {message}; releasing the whole set, the Workload will be requeued"
    return Plan(
        status=new,
        release=releasing.request(pool, new),
        events=(event("GangDegraded", text, warning=True),),
    )


def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
    status = pool.status
    if has_resources(status):
        return Plan(status=status, release=releasing.request(pool, status))
    uid = claim_key(pool)
    if uid and uid == status.degradedClaimKey:
        return Plan(status=status)  # waiting for Kueue to evict the claimant
    return Plan(status=update(status, phase="Idle", degradedClaimKey="", claimKey=""))

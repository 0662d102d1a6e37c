"""Idle: no instances. A claim starts an acquisition (in the pool's placement group,
if it still has one); without a claim the pool's own placement group is deleted."""

from __future__ import annotations

from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool.model import (
    DeleteGroup,
    Observed,
    Plan,
    claim_key,
    has_resources,
    update,
)
from atomic_gang_provisioner.pool.phases import releasing


def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
    status = pool.status
    if has_resources(status):  # guard: Idle must never hold billing resources
        return releasing.begin(
            pool,
            status,
            reason=FailureReason.LEFTOVER,
            message="Idle pool still recorded instances; releasing them",
        )
    uid = claim_key(pool)
    if not uid and status.placementGroup:  # the last instance is gone: so goes the group
        return Plan(status=status, call=DeleteGroup())
    if not uid:
        return Plan(status=status)
    return Plan(
        status=update(
            status,
            phase="Acquiring",
            claimKey=uid,
            acquiringSince=now,
            consecutiveShortfalls=0,
            nextAttemptAt=None,
            lastError="",
            lastErrorReason=FailureReason.NONE,
        )
    )

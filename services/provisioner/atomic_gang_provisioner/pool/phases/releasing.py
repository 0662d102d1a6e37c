"""Releasing: terminate the whole set (ENI-aware), then go Idle or re-acquire.

Entered from any phase that must give the instances back: join watchdog,
lost instance, keep-warm expiry, finalizer. Release is idempotent, so a crash
here simply releases again.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.types import ReleaseRequest, ReleaseResult
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import (
    Knobs,
    Observed,
    Plan,
    Terminate,
    claim_key,
    has_resources,
    update,
)
from atomic_gang_provisioner.pool.rules import block


def request(pool: GangNodePool, status: GangNodePoolStatus) -> ReleaseRequest:
    return ReleaseRequest(
        instance_ids=tuple(status.instanceIds),
        fleet_ids=tuple(status.fleetIds),
        enis=tuple(status.pendingEnis),
    )


def begin(
    pool: GangNodePool, status: GangNodePoolStatus, *, reason: FailureReason, message: str
) -> Plan:
    """Move to Releasing for ``reason`` (recorded in status, a Warning Event) and release
    in the same reconcile. A set released for a shortfall counts as a failed attempt (of
    acquireAttemptsBeforeRetry)."""
    new = update(status, phase="Releasing", lastErrorReason=reason, lastError=message)
    if reason.shortfall:
        new = update(new, consecutiveShortfalls=status.consecutiveShortfalls + 1)
    return Plan(
        status=new,
        call=Terminate(request(pool, new)),
        outcomes=(outcomes.ReleaseStarted(reason=reason, message=message),),
    )


def begin_quietly(
    pool: GangNodePool, status: GangNodePoolStatus, *, reason: str, message: str
) -> Plan:
    """Move to Releasing as planned (keep-warm over, a lost launch found): a Normal Event
    named ``reason``, nothing recorded as an error, and release in the same reconcile."""
    new = update(status, phase="Releasing")
    started = outcomes.ReleaseStarted(reason=reason, message=message, planned=True)
    return Plan(status=new, call=Terminate(request(pool, new)), outcomes=(started,))


def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
    status = pool.status
    if not has_resources(status):
        return after_release(pool, status, result=ReleaseResult(), now=now, knobs=observed.knobs)
    return Plan(status=status, call=Terminate(request(pool, status)))


def after_release(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    *,
    result: ReleaseResult,
    now: datetime,
    knobs: Knobs,
) -> Plan:
    if not result.done:
        pending = update(
            status,
            pendingEnis=list(result.pending_enis),
            lastError=result.message or status.lastError,
        )
        return Plan(status=pending, requeue_after=knobs.release_poll)
    n = len(status.instanceIds)
    plan = _after(pool, status, _cleared(status), now=now, knobs=knobs)
    if not n:
        return plan
    return replace(plan, outcomes=(outcomes.Released(instances=n),))


def _cleared(status: GangNodePoolStatus) -> GangNodePoolStatus:
    """``status`` without the released set: no instances, no network, no reservation."""
    return block.forget(
        update(
            status,
            instanceIds=[],
            fleetIds=[],
            pendingEnis=[],
            readyCount=0,
            readyWithoutDevices=0,
            activeGroup="",
            keepWarmUntil=None,
            joinDeadline=None,
            launchedAt=None,
            satisfiedAt=None,
            unhealthySince=None,
            networkNodes=None,
            spread=0,
        )
    )


def _after(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    cleared: GangNodePoolStatus,
    *,
    now: datetime,
    knobs: Knobs,
) -> Plan:
    """Where a released pool goes. Its own placement group, if any, is deleted next
    round, from Idle or the finalizer (before the finalizer goes)."""
    group_next = knobs.release_poll if cleared.placementGroup else None
    if pool.deleting:
        return Plan(status=cleared, remove_finalizer=group_next is None, requeue_after=group_next)
    if status.phase == "Degraded":  # wait there until the degraded claim is gone
        return Plan(status=cleared)
    if claim_key(pool):
        nxt = update(
            cleared,
            phase="Acquiring",
            nextAttemptAt=None,
            acquiringSince=status.acquiringSince or now,
        )
        return Plan(status=nxt)
    return Plan(status=update(cleared, phase="Idle", claimKey=""), requeue_after=group_next)

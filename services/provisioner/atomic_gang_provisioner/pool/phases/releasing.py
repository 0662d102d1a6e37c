"""Releasing: terminate the whole set (ENI-aware), then go Idle or re-acquire.

Entered from any phase that must give the instances back: join watchdog,
lost instance, keep-warm expiry, finalizer. Release is idempotent, so a crash
here simply releases again.
"""

from __future__ import annotations

from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.values import ReleaseRequest
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import Knobs, Observed, claim_key, has_resources, update
from atomic_gang_provisioner.pool.rules import block
from atomic_gang_provisioner.pool.story import End, Next, Part, Story, Terminate, ask


def request(status: GangNodePoolStatus) -> ReleaseRequest:
    return ReleaseRequest(
        instance_ids=tuple(status.instanceIds),
        fleet_ids=tuple(status.fleetIds),
        enis=tuple(status.pendingEnis),
    )


def begin(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    *,
    reason: FailureReason,
    message: str,
    observed: Observed,
    now: datetime,
) -> Part[End]:
    """Move to Releasing for ``reason`` (recorded in status, a Warning Event) and release.
    A set released for a shortfall counts as a failed attempt (of
    acquireAttemptsBeforeRetry)."""
    new = update(status, phase="Releasing", lastErrorReason=reason, lastError=message)
    if reason.shortfall:
        new = update(new, consecutiveShortfalls=status.consecutiveShortfalls + 1)
    yield outcomes.ReleaseStarted(reason=reason, message=message)
    return (yield from terminate(pool, new, knobs=observed.knobs, now=now))


def begin_quietly(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    *,
    reason: str,
    message: str,
    observed: Observed,
    now: datetime,
) -> Part[End]:
    """Move to Releasing as planned (keep-warm over, a lost launch found): a Normal Event
    named ``reason``, nothing recorded as an error, and release."""
    new = update(status, phase="Releasing")
    yield outcomes.ReleaseStarted(reason=reason, message=message, planned=True)
    return (yield from terminate(pool, new, knobs=observed.knobs, now=now))


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    status = pool.status
    if not has_resources(status):  # guard: released already (a crash before the write)
        return Next(after(pool, status, now=now, knobs=observed.knobs).status)
    return (yield from terminate(pool, status, knobs=observed.knobs, now=now))


def terminate(
    pool: GangNodePool, status: GangNodePoolStatus, *, knobs: Knobs, now: datetime
) -> Part[End]:
    """Terminate the recorded set (once ``status`` is stored); poll while its ENIs linger."""
    result = yield from ask(Terminate(request(status), status))
    if not result.done:
        pending = update(
            status,
            pendingEnis=list(result.pending_enis),
            lastError=result.message or status.lastError,
        )
        return End(status=pending, requeue_after=knobs.release_poll)
    if status.instanceIds:
        yield outcomes.Released(instances=len(status.instanceIds))
    return after(pool, status, now=now, knobs=knobs)


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
            zones=[],
            repair=None,
            repairs=0,
        )
    )


def after(pool: GangNodePool, status: GangNodePoolStatus, *, now: datetime, knobs: Knobs) -> End:
    """Where a released pool goes. Its own placement group, if any, is deleted next
    round, from Idle or the finalizer (before the finalizer goes)."""
    cleared = _cleared(status)
    group_next = knobs.release_poll if cleared.placementGroup else None
    if pool.deleting:
        return End(status=cleared, remove_finalizer=group_next is None, requeue_after=group_next)
    if status.phase == "Degraded":  # wait there until the degraded claim is gone
        return End(status=cleared)
    if claim_key(pool):
        nxt = update(
            cleared,
            phase="Acquiring",
            nextAttemptAt=None,
            acquiringSince=status.acquiringSince or now,
        )
        return End(status=nxt)
    return End(status=update(cleared, phase="Idle", claimKey=""), requeue_after=group_next)

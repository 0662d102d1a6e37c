"""Acquiring: one atomic N-or-0 launch per attempt, backoff between shortfalls.

The generation in status is the one the next launch uses; it is bumped only
after a terminal result, so a crash between "EC2 returned" and "status written"
re-issues the same ClientTokens and adopts the set instead of launching twice.

A launch whose outcome is unknown (its answer lost past the retry budget) is written
to status as ``pendingLaunch`` before anything else is tried, and the next attempt
sends that exact request first: idempotency is zonal, and a sweep that started again
from the first zone could find room there and bill a second set while the first one,
missed by an eventually consistent tag lookup, runs on.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus, PendingLaunch
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    AwaitingReservation,
    Launched,
    PermanentFailure,
    QuotaExceeded,
    RetryLater,
    Shortfall,
    UnknownLaunch,
    Waiting,
)
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import (
    Knobs,
    Observed,
    backoff_seconds,
    claim_key,
    lookups_lag_until,
    seconds_until,
    update,
)
from atomic_gang_provisioner.pool.phases import releasing
from atomic_gang_provisioner.pool.report import gave_up
from atomic_gang_provisioner.pool.rules import block
from atomic_gang_provisioner.pool.story import End, FindByTag, Launch, Next, Story, ask


def abandon(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    """The claim is gone mid-acquisition. A launch whose response was lost (crash) may
    have left a set at EC2 that status never recorded: look it up by tag and release it
    before going Idle, or it would bill until the reaper's max-lifetime sweep. After a
    launch of unknown outcome, a lookup that finds nothing is not believed until
    ``lost_launch_settle`` has passed since (EC2's tag lookups lag new instances): the
    pool looks again until then. What is found is released by id, and its termination
    confirmed by id (``releasing``)."""
    status = pool.status
    found = yield from ask(FindByTag(status.acquireGeneration))
    unsure_until = lookups_lag_until(status, observed.knobs)
    if not found and unsure_until is not None and now < unsure_until:
        looking = update(
            status,
            claimKey="",
            lastError=(
                "The claim was released during a launch of unknown outcome; looking for its "
                f"instances by tag until {unsure_until.strftime('%H:%M:%SZ')}, since EC2's "
                "tag lookups lag new instances"
            ),
        )
        wait = min(observed.knobs.release_poll * 2, (unsure_until - now).total_seconds())
        return End(status=looking, requeue_after=max(wait, 1.0))
    idle = update(
        status,
        phase="Idle",
        claimKey="",
        consecutiveShortfalls=0,
        nextAttemptAt=None,
        acquiringSince=None,
    )
    if not found:
        yield outcomes.AcquisitionAbandoned()
        return Next(idle)
    ids = [i.instance_id for i in found]
    orphans = update(
        idle, phase="Releasing", instanceIds=ids, acquireGeneration=status.acquireGeneration + 1
    )
    return (
        yield from releasing.begin_quietly(
            pool,
            orphans,
            reason="LostLaunchFound",
            message=(
                f"Found {len(ids)} instance(s) of an unrecorded launch after the claim was "
                "released; releasing them"
            ),
            observed=observed,
            now=now,
        )
    )


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    status = pool.status
    uid = claim_key(pool)
    if not uid:
        return (yield from abandon(pool, observed, now))
    if uid != status.claimKey:  # a different claimant: its attempts start from zero
        status = update(
            status,
            claimKey=uid,
            consecutiveShortfalls=0,
            nextAttemptAt=None,
            acquiringSince=now,
            lastError="",
            lastErrorReason=FailureReason.NONE,
            waitingSince=None,
        )
    if gave_up(status, observed.knobs):
        return End(status=status)  # the claim drop (Kueue eviction) wakes us
    wait = seconds_until(status.nextAttemptAt, now)
    if wait:
        return End(status=status, requeue_after=wait)
    spec = pool.spec.shape.gang_spec(pool=pool.name, keep_warm_ttl=pool.spec.keepWarmTTL)
    if spec.placement is not None and not spec.placement_group_name:
        # Recorded before the launch that may create it, so that it is deleted later.
        own = naming.placement_group_name(cluster=observed.knobs.cluster, pool=pool.name)
        status = update(status, placementGroup=own)
    request = AcquireRequest(
        spec=spec,
        generation=status.acquireGeneration,
        block_policy=block.policy(pool, observed.knobs),
        waiting_since=status.acquiringSince,
        replay=replay_of(status),
    )
    result = yield from ask(Launch(request, status))
    return (
        yield from after_acquire(
            pool, status, request=request, result=result, now=now, knobs=observed.knobs
        )
    )


def replay_of(status: GangNodePoolStatus) -> UnknownLaunch | None:
    """The recorded launch of unknown outcome, if it was sent at this generation."""
    pending = status.pendingLaunch
    if pending is None or pending.generation != status.acquireGeneration:
        return None
    return UnknownLaunch(zone=pending.zone, token=pending.clientToken)


def pending_after(
    status: GangNodePoolStatus, result: RetryLater, now: datetime
) -> PendingLaunch | None:
    """What to record after a retryable failure: its unknown launch, or the one already
    recorded (a throttle or a timeout of the replay itself leaves that one standing)."""
    if result.unknown is None:
        return status.pendingLaunch
    return PendingLaunch(
        generation=status.acquireGeneration,
        zone=result.unknown.zone,
        clientToken=result.unknown.token,
        recordedAt=now,
    )


def after_acquire(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    *,
    request: AcquireRequest,
    result: AcquireResult,
    now: datetime,
    knobs: Knobs,
) -> Story:
    """What EC2's answer to the launch makes of the pool."""
    mode = pool.spec.shape.mode
    if isinstance(result, Launched):
        return (
            yield from _launched(
                pool, status, generation=request.generation, result=result, now=now, knobs=knobs
            )
        )
    if isinstance(result, Waiting):  # not an attempt: the pool waits its turn
        waiting = update(status, lastError=result.message, lastErrorReason=result.reason)
        return End(status=waiting, requeue_after=result.retry_after)
    if isinstance(result, RetryLater):
        yield outcomes.LaunchRetried(mode=mode)
        delay = result.retry_after or min(knobs.backoff_max, knobs.backoff_base)
        retry = update(
            status,
            lastError=f"{result.code}: {result.message}",
            lastErrorReason=result.reason,
            pendingLaunch=pending_after(status, result, now),
        )
        return End(status=retry, requeue_after=delay)
    if isinstance(result, AwaitingReservation):
        return (yield from _waiting(status, generation=request.generation, result=result, now=now))
    return (
        yield from _failed(
            pool, status, generation=request.generation, result=result, now=now, knobs=knobs
        )
    )


def _waiting(
    status: GangNodePoolStatus, *, generation: int, result: AwaitingReservation, now: datetime
) -> Story:
    """A listed block starts later: sleep until its start (no polling, no attempt spent)."""
    start = result.starts_at
    delay = (start - now).total_seconds() if start and start > now else block.NOT_ACTIVE_POLL
    new = update(
        status,
        acquireGeneration=generation + 1,
        pendingLaunch=None,
        nextAttemptAt=now + timedelta(seconds=delay),
        lastError=result.message,
        lastErrorReason=result.reason,
        waitingSince=status.waitingSince or now,
    )
    if status.lastErrorReason != block.WAITING:  # said once, not at every look
        yield outcomes.WaitingForReservation(message=result.message)
    return End(status=new, requeue_after=delay)


def _launched(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    *,
    generation: int,
    result: Launched,
    now: datetime,
    knobs: Knobs,
) -> Story:
    ids = list(result.instance_ids)
    zones = sorted({i.availability_zone for i in result.instances})
    new = update(
        block.in_use(status, result),
        pendingLaunch=None,
        phase="Joining",
        activeGeneration=generation,
        activeGroup=naming.group_id(pool=pool.name, generation=generation),
        acquireGeneration=generation + 1,
        instanceIds=ids,
        zones=zones,
        repairs=0,
        fleetIds=[result.fleet_id] if result.fleet_id else [],
        launchedAt=now,
        joinDeadline=now + knobs.join_deadline,
        readyCount=0,
        readyWithoutDevices=0,
        nextAttemptAt=None,
        lastError="",
        lastErrorReason=FailureReason.NONE,
    )
    yield outcomes.Launched(
        adopted=result.adopted,
        mode=pool.spec.shape.mode,
        instance_type=pool.spec.shape.instanceType,
        zones=tuple(zones),
        instance_ids=tuple(ids),
        where=block.where(new, knobs),
        waited=block.waited(status, now),
    )
    return End(status=new, requeue_after=knobs.join_deadline.total_seconds())


def _why(result: Shortfall | QuotaExceeded | PermanentFailure) -> tuple[str, str]:
    """(the detail status and Events show, the acquisitions metric's result)."""
    if isinstance(result, Shortfall):
        return result.message, "capacity"
    if isinstance(result, QuotaExceeded):
        return f"{result.code}: {result.message}", "quota"
    hint = f" ({result.hint})" if result.hint else ""
    return f"{result.code}: {result.message}{hint}", "permanent"


def _failed(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    *,
    generation: int,
    result: Shortfall | QuotaExceeded | PermanentFailure,
    now: datetime,
    knobs: Knobs,
) -> Story:
    attempt = status.consecutiveShortfalls + 1
    reason = result.reason
    detail, label = _why(result)
    delay = backoff_seconds(
        pool=pool.name, attempt=attempt, base=knobs.backoff_base, cap=knobs.backoff_max
    )
    new = update(
        status,
        acquireGeneration=generation + 1,
        pendingLaunch=None,
        consecutiveShortfalls=attempt,
        nextAttemptAt=now + timedelta(seconds=delay),
        lastError=detail,
        lastErrorReason=reason,
    )
    yield outcomes.AttemptFailed(
        reason=reason,
        result=label,
        mode=pool.spec.shape.mode,
        shape=pool.spec.shape.summary,
        attempt=attempt,
        attempts=knobs.attempts_before_retry,
        detail=detail,
    )
    return End(status=new, requeue_after=None if gave_up(new, knobs) else delay)

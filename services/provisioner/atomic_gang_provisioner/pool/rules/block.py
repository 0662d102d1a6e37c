"""Capacity reservations on the pool side: what a claimant needs of a block, and its end.

``policy`` tells the cloud adapter how the claimant may use a block (its min-runtime,
else capacityBlock.minRemainingSeconds, before the drain point). A gang in a block is
warned (Event ``CapacityBlockEnding``) ``warningLeadSeconds`` before the drain point
(EndDate − drainLeadSeconds); at the drain point the claimant gets Retry (Degraded with
reason ``CapacityBlockEnding``), so Kueue evicts it and its pods stop gracefully. The
pool holds the set until that claim drops or until :func:`release_by` (a minute before
EC2's own termination at EndDate − 30 min), whichever comes first, then releases it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from atomic_gang import GoDuration, keys
from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud import reservation_fit
from atomic_gang_provisioner.cloud.reservation_fit import BlockPolicy, span
from atomic_gang_provisioner.cloud.values import Launched
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import Knobs, claim_key, seconds_until, update
from atomic_gang_provisioner.pool.story import End, Story
from atomic_gang_provisioner.timestamps import rfc3339

WAITING: Final = FailureReason.CAPACITY_RESERVATION_NOT_STARTED
ENDING: Final = FailureReason.CAPACITY_BLOCK_ENDING
# A reservation whose start has passed but that EC2 does not show active yet: look again.
NOT_ACTIVE_POLL: Final = 1.0


def policy(pool: GangNodePool, knobs: Knobs) -> BlockPolicy:
    need = pool.spec.minRuntime
    try:
        needed = GoDuration.parse(need).to_timedelta() if need else None
    except ValueError:  # the pool is read tolerantly; the webhook checked the Job's value
        needed = None
    if needed is not None:
        return BlockPolicy(
            drain_lead=knobs.block_drain_lead,
            needed=needed,
            needed_from=f"{keys.MIN_RUNTIME} {need}",
        )
    return BlockPolicy(
        drain_lead=knobs.block_drain_lead,
        needed=knobs.block_min_remaining,
        needed_from="capacityBlock.minRemainingSeconds",
    )


def in_use(status: GangNodePoolStatus, result: Launched) -> GangNodePoolStatus:
    """``status`` recording the reservation a launched (or adopted) set runs in."""
    res = result.reservation
    return update(
        status,
        reservationId=res.reservation_id if res else "",
        reservationEnd=res.end if res else None,
        capacityBlock=bool(res and res.capacity_block),
        blockEndingWarned=False,
        waitingSince=None,
    )


def waited(status: GangNodePoolStatus, now: datetime) -> float | None:
    """The seconds the gang waited for a reservation's start, once it launches (None: it
    did not wait)."""
    if status.waitingSince is None:
        return None
    return (now - status.waitingSince).total_seconds()


def forget(status: GangNodePoolStatus) -> GangNodePoolStatus:
    """``status`` of a released set: no reservation in use."""
    return update(
        status, reservationId="", reservationEnd=None, capacityBlock=False, blockEndingWarned=False
    )


def drain_point(status: GangNodePoolStatus, knobs: Knobs) -> datetime | None:
    if not status.capacityBlock or status.reservationEnd is None:
        return None
    return status.reservationEnd - knobs.block_drain_lead


def release_by(status: GangNodePoolStatus, knobs: Knobs) -> datetime | None:
    if not status.capacityBlock or status.reservationEnd is None:
        return None
    return reservation_fit.release_by(status.reservationEnd, knobs.block_drain_lead)


def where(status: GangNodePoolStatus, knobs: Knobs) -> str:
    """`` in Capacity Block cr-… (ends …, drained at …)``: for the claimant's messages."""
    if not status.reservationId:
        return ""
    kind = "Capacity Block" if status.capacityBlock else "capacity reservation"
    ends = status.reservationEnd
    drain = drain_point(status, knobs)
    when = f"ends {rfc3339(ends)}" if ends else "no end date"
    if drain is not None:
        when += f", drained at {rfc3339(drain)}"
    return f" in {kind} {status.reservationId} ({when})"


def too_short_for(
    pool: GangNodePool, status: GangNodePoolStatus, now: datetime, knobs: Knobs
) -> tuple[FailureReason, str] | None:
    """(reason, message) when the set's block leaves the claimant less than it needs
    before the drain point (min-runtime, else capacityBlock.minRemainingSeconds)."""
    drain = drain_point(status, knobs)
    need = policy(pool, knobs)
    if drain is None or drain - now >= need.needed:
        return None
    return FailureReason.CAPACITY_BLOCK_TOO_SHORT, (
        f"Capacity Block {status.reservationId} leaves {span(drain - now)} before its drain"
        f" point {rfc3339(drain)}; the claimant needs {span(need.needed)} ({need.needed_from}):"
        " releasing the warm set"
    )


def draining(status: GangNodePoolStatus, now: datetime, knobs: Knobs) -> bool:
    drain = drain_point(status, knobs)
    return drain is not None and now >= drain


def drain_message(status: GangNodePoolStatus, knobs: Knobs) -> str:
    drain = drain_point(status, knobs) or status.reservationEnd
    when = rfc3339(drain) if drain else "?"
    ends = rfc3339(status.reservationEnd) if status.reservationEnd else "?"
    return (
        f"Capacity Block {status.reservationId} reached its drain point {when}"
        f" (it ends at {ends}); the instances are released before EC2 terminates them"
    )


def watch(
    status: GangNodePoolStatus, *, requeue_after: float | None, now: datetime, knobs: Knobs
) -> Story:
    """A claimed gang in a block before its drain point: the warning, once, and a
    wake-up for it and for the drain point."""
    drain = drain_point(status, knobs)
    if drain is None or now >= drain:
        return End(status=status, requeue_after=requeue_after)
    warn_at = drain - knobs.block_warning_lead
    wake = warn_at if not status.blockEndingWarned and now < warn_at else drain
    requeue = min(x for x in (requeue_after, seconds_until(wake, now)) if x is not None)
    if status.blockEndingWarned or now < warn_at:
        return End(status=status, requeue_after=requeue)
    yield outcomes.BlockEnding(
        message=(
            f"Capacity Block {status.reservationId} ends at "
            f"{rfc3339(status.reservationEnd or drain)}; the Workload is evicted at the drain "
            f"point {rfc3339(drain)} (in {span(drain - now)}): checkpoint now"
        )
    )
    return End(status=update(status, blockEndingWarned=True), requeue_after=requeue)


def holding(pool: GangNodePool, status: GangNodePoolStatus, now: datetime, knobs: Knobs) -> float:
    """Seconds a drained set is still kept for its evicted claimant's pods (0: release)."""
    if status.lastErrorReason != ENDING or claim_key(pool) != status.degradedClaimKey:
        return 0.0
    return seconds_until(release_by(status, knobs), now) or 0.0

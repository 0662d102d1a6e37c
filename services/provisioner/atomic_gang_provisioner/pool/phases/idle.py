"""Idle: no instances. A claim starts an acquisition (in the pool's placement group,
if it still has one); without a claim the pool's own placement group is deleted."""

from __future__ import annotations

from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import Observed, claim_key, has_resources, update
from atomic_gang_provisioner.pool.phases import releasing
from atomic_gang_provisioner.pool.story import DeleteGroup, End, Next, Part, Story, ask


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    status = pool.status
    if has_resources(status):  # guard: Idle must never hold billing resources
        return (
            yield from releasing.begin(
                pool,
                status,
                reason=FailureReason.LEFTOVER,
                message="Idle pool still recorded instances; releasing them",
                observed=observed,
                now=now,
            )
        )
    uid = claim_key(pool)
    if not uid and status.placementGroup:  # the last instance is gone: so goes the group
        return (yield from delete_group(pool, status, observed))
    if not uid:
        return End(status=status)
    return Next(
        update(
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


def delete_group(pool: GangNodePool, status: GangNodePoolStatus, observed: Observed) -> Part[End]:
    """The pool's own placement group: gone, or still counted in use by EC2 (terminated
    instances linger there a while): not an error, ask again after the release poll."""
    deleted = yield from ask(DeleteGroup())
    if not deleted:
        return End(status=status, requeue_after=observed.knobs.release_poll)
    yield outcomes.GroupDeleted(name=status.placementGroup)
    return End(status=update(status, placementGroup=""), remove_finalizer=pool.deleting)

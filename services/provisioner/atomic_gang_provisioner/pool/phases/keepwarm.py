"""KeepWarm: no claim; the formed set waits for the next claimant until
``keepWarmUntil`` (mirrored to an EC2 tag so the reaper enforces it after a
restart). A new claim reuses the set with no launch and clears the window, unless the
set's Capacity Block has less time left than the claimant needs. A pool with no owning
namespace (from before ownership) keeps no warm set."""

from __future__ import annotations

from datetime import datetime

from atomic_gang import keys
from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import Observed, claim_key, seconds_until, update
from atomic_gang_provisioner.pool.phases import releasing
from atomic_gang_provisioner.pool.rules import block, health
from atomic_gang_provisioner.pool.story import End, Next, Story, TagInstances


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    verdict = yield from health.check(pool, observed, now)
    status = verdict.status
    if verdict.broken:  # no claim to keep it for: the warm set goes whole
        return (
            yield from releasing.begin(
                pool,
                status,
                reason=verdict.reason,
                message=verdict.message,
                observed=observed,
                now=now,
            )
        )
    if claim_key(pool):
        short = block.too_short_for(pool, status, now, observed.knobs)
        if short:  # never start what cannot finish: the claimant acquires afresh
            reason, message = short
            return (
                yield from releasing.begin(
                    pool, status, reason=reason, message=message, observed=observed, now=now
                )
            )
        return (yield from _reuse(pool, status, now))
    if pool.spec.ownerNamespace is None:
        # From before pools belonged to namespaces: no Workload's label names it any more
        # (workload.tenancy), so its warm set would bill for nobody until the window ends.
        return (
            yield from releasing.begin_quietly(
                pool,
                status,
                reason="KeepWarmUnowned",
                message="The pool has no owning namespace to keep its warm set for; releasing it",
                observed=observed,
                now=now,
            )
        )
    if status.keepWarmUntil is None or now >= status.keepWarmUntil:
        return (
            yield from releasing.begin_quietly(
                pool,
                status,
                reason="KeepWarmExpired",
                message="The keep-warm window ended; releasing the warm set",
                observed=observed,
                now=now,
            )
        )
    wait = seconds_until(status.keepWarmUntil, now)
    if verdict.wait is not None:
        wait = min(wait or verdict.wait, verdict.wait)
    return End(status=status, requeue_after=wait)


def _reuse(pool: GangNodePool, status: GangNodePoolStatus, now: datetime) -> Story:
    """A claim on the warm set: Satisfied at once, no launch, no join."""
    key = claim_key(pool)
    claim = pool.spec.claim
    who = f"{claim.namespace}/{claim.name}" if claim else key
    ids = tuple(status.instanceIds)
    yield TagInstances(instance_ids=ids, tags=((keys.KEEP_WARM_UNTIL, ""),))
    yield outcomes.KeepWarmReused(nodes=len(ids), claimant=who)
    return Next(
        update(
            status,
            phase="Satisfied",
            claimKey=key,
            keepWarmUntil=None,
            satisfiedAt=now,
            repairs=0,  # repairs are counted per claim
        )
    )

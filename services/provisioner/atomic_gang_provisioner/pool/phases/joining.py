"""Joining: N instances launched; wait for exactly N Ready Nodes of this group.

Satisfied needs N live instance ids, N Ready Nodes whose providerIDs match, the
active group's labels, each Node's allocatable holding the extended resources one pod
of the claimant asks for (a device plugin adds them after the Node turned Ready), and
(for types EC2 reports topology for) the gang's network topology read, within
``max-spread`` when set. The join watchdog releases the whole set at the deadline: no
half-joined pool is ever left waiting. An instance is live when its Node turned Ready
within ``ec2Api.describeReuseSeconds`` (its kubelet ran then) and EC2's last answer
does not say otherwise; else one describe, taken only once all N Nodes are Ready,
decides.

``readyCount`` (and ``readyWithoutDevices``, the Nodes Ready whose device plugin has not
registered yet) is written as Nodes turn Ready only once the gang has joined for
``QUIET_SECONDS``, and then at most every ``PROGRESS_SECONDS``: a quick join costs no
status write per Node (nor the Workload's check-message write each would cause), a slow
or stuck one shows its n/N, and 100 slow joins at once (800 not-ready taints lifted a
dozen a second) do not write each Node's turn.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import (
    Observed,
    claim_key,
    dead_instances,
    devices_note,
    health,
    seconds_until,
    update,
)
from atomic_gang_provisioner.pool.phases import releasing
from atomic_gang_provisioner.pool.rules import block, spread
from atomic_gang_provisioner.pool.story import (
    Describe,
    End,
    LabelNodes,
    Next,
    Part,
    ReadTopologyAhead,
    Story,
    ask,
)

QUIET_SECONDS = 20.0
PROGRESS_SECONDS = 10.0


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    status = pool.status
    if not status.instanceIds:  # guard
        return Next(update(status, phase="Idle" if not claim_key(pool) else "Acquiring"))
    want = len(status.instanceIds)
    claim = pool.spec.claim
    h = health(pool, observed, devices=claim.resources if claim is not None else None)
    quiet_until = _quiet_until(status.launchedAt, observed.progress_written_at)
    if h.ready >= want or quiet_until is None or now >= quiet_until:
        bare = len(h.without_devices)
        status = update(status, readyCount=h.ready, readyWithoutDevices=bare)
    if (over := _over(pool, status, observed, now, ready=h.ready)) is not None:
        reason, message = over
        return (
            yield from releasing.begin(
                pool, status, reason=reason, message=message, observed=observed, now=now
            )
        )
    if h.ready < want:
        yield from _read_ahead(pool, status, observed, ready=h.ready)
        marks = (status.joinDeadline, block.drain_point(status, observed.knobs), quiet_until)
        due = [t for t in marks if t is not None and t > now]
        return End(status=status, requeue_after=seconds_until(min(due, default=None), now))
    if not _nodes_vouch(pool, observed, now):
        described = yield from ask(Describe(tuple(status.instanceIds), shared=True))
        if dead := dead_instances(pool, described):
            message = (
                f"{len(dead)} instance(s) died before joining ({' '.join(dead)}); "
                "releasing the whole set"
            )
            return (
                yield from releasing.begin(
                    pool,
                    status,
                    reason=FailureReason.INSTANCE_LOST,
                    message=message,
                    observed=observed,
                    now=now,
                )
            )
    placed = yield from spread.gate(pool, status, observed)
    if isinstance(placed, End):
        return placed
    if isinstance(placed, spread.TooWide):  # a failed attempt: the whole set goes
        return (
            yield from releasing.begin(
                pool,
                placed.status,
                reason=spread.REASON,
                message=placed.message,
                observed=observed,
                now=now,
            )
        )
    if placed.labels:
        yield LabelNodes(placed.labels)
    return (yield from _satisfied(pool, placed.status, now))


def _read_ahead(
    pool: GangNodePool, status: GangNodePoolStatus, observed: Observed, *, ready: int
) -> Part[None]:
    """While the gang joins: its topology read ahead (the read at N Ready is then a cache
    hit) and, once the cache holds it, the layer labels its Nodes so far lack."""
    ids = spread.ahead(pool, status, ready=ready)
    if not ids:
        return
    read = yield from ask(ReadTopologyAhead(ids))
    labels = spread.ahead_labels(status, read, observed)
    if labels:
        yield LabelNodes(labels)


def _nodes_vouch(pool: GangNodePool, observed: Observed, now: datetime) -> bool:
    """Every Node of the set turned Ready within the liveness window (its kubelet ran
    then: as fresh a sign of life as an EC2 answer that old) and EC2's last answer calls
    none of the instances unhealthy. Either side of now: a kubelet's clock may lead ours."""
    window = observed.knobs.liveness_window
    if window <= timedelta(0) or observed.reported_unhealthy:
        return False
    for iid in pool.status.instanceIds:
        node = observed.node_for(iid)
        since = node.ready_since if node is not None else None
        if since is None or abs(now - since) > window:
            return False
    return True


# No node at all is most often a node role the cluster no longer lets join; the next
# attempt checks that afresh before it launches (cloud.aws.cluster.ACCESS_TTL_SECONDS).
NONE_JOINED = (
    " (none joined: the next attempt first re-checks that the node role may join the "
    "cluster, its access entry or aws-auth mapping, and says so if it may not)"
)


def _any_registered(status: GangNodePoolStatus, observed: Observed) -> bool:
    """Whether any instance of the set has a Node, Ready or not."""
    return any(observed.node_for(i) is not None for i in status.instanceIds)


def _over(
    pool: GangNodePool, status: GangNodePoolStatus, observed: Observed, now: datetime, *, ready: int
) -> tuple[FailureReason, str] | None:
    """Why the join is over before Satisfied (the block drains, or the deadline passed):
    the whole set goes. None while it may go on."""
    if block.draining(status, now, observed.knobs):
        return block.ENDING, block.drain_message(status, observed.knobs)
    if status.joinDeadline is not None and now >= status.joinDeadline:
        return FailureReason.JOIN_TIMEOUT, (
            f"Only {ready}/{len(status.instanceIds)} nodes became Ready before the join "
            f"deadline{devices_note(pool, status.readyWithoutDevices)}; releasing the whole "
            f"set and retrying{'' if _any_registered(status, observed) else NONE_JOINED}"
        )
    return None


def _quiet_until(launched_at: datetime | None, progress_at: datetime | None) -> datetime | None:
    """Until when a new n/N waits: the quiet start of the join, then the last one's age."""
    if launched_at is None:
        return None
    quiet = launched_at + timedelta(seconds=QUIET_SECONDS)
    if progress_at is None:
        return quiet
    return max(quiet, progress_at + timedelta(seconds=PROGRESS_SECONDS))


def _satisfied(pool: GangNodePool, status: GangNodePoolStatus, now: datetime) -> Story:
    n = len(status.instanceIds)
    new = update(
        status,
        phase="Satisfied",
        readyCount=n,
        readyWithoutDevices=0,
        satisfiedAt=now,
        claimKey=claim_key(pool),
        unhealthySince=None,
        joinDeadline=None,
        consecutiveShortfalls=0,
        lastError="",  # e.g. a topology read that failed a while before it worked
    )
    acquiring, launched = status.acquiringSince, status.launchedAt
    yield outcomes.Satisfied(
        nodes=n,
        group=status.activeGroup,
        since_acquiring=None if acquiring is None else (now - acquiring).total_seconds(),
        since_launch=None if launched is None else (now - launched).total_seconds(),
    )
    return Next(new)

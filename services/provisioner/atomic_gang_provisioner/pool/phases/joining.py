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
    Describe,
    Observed,
    Plan,
    claim_key,
    dead_instances,
    devices_note,
    health,
    seconds_until,
    update,
)
from atomic_gang_provisioner.pool.phases import releasing
from atomic_gang_provisioner.pool.rules import block, spread

QUIET_SECONDS = 20.0
PROGRESS_SECONDS = 10.0


def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
    status = pool.status
    if not status.instanceIds:  # guard
        return Plan(status=update(status, phase="Idle" if not claim_key(pool) else "Acquiring"))
    want = len(status.instanceIds)
    claim = pool.spec.claim
    h = health(pool, observed, devices=claim.resources if claim is not None else None)
    quiet_until = _quiet_until(status.launchedAt, observed.progress_written_at)
    if h.ready >= want or quiet_until is None or now >= quiet_until:
        bare = len(h.without_devices)
        status = update(status, readyCount=h.ready, readyWithoutDevices=bare)
    if (ended := _ended(pool, status, observed, now, ready=h.ready)) is not None:
        return ended
    if h.ready < want:
        marks = (status.joinDeadline, block.drain_point(status, observed.knobs), quiet_until)
        due = [t for t in marks if t is not None and t > now]
        return Plan(
            status=status,
            requeue_after=seconds_until(min(due, default=None), now),
            warm_topology=spread.ahead(pool, status, ready=h.ready),
            label_nodes=spread.ahead_labels(status, observed),
        )
    if observed.instances is None and not _nodes_vouch(pool, observed, now):
        return Plan(status=status, read=Describe(shared=True))
    placed = spread.gate(pool, status, observed)
    return placed if isinstance(placed, Plan) else _satisfied(pool, placed, now)


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


def _ended(
    pool: GangNodePool, status: GangNodePoolStatus, observed: Observed, now: datetime, *, ready: int
) -> Plan | None:
    """The join is over before Satisfied: an instance died, the block drains, or the
    deadline passed. The whole set goes."""
    if observed.instances is not None and (dead := dead_instances(pool, observed)):
        message = (
            f"{len(dead)} instance(s) died before joining ({' '.join(dead)}); "
            "releasing the whole set"
        )
        return releasing.begin(pool, status, reason=FailureReason.INSTANCE_LOST, message=message)
    if block.draining(status, now, observed.knobs):
        message = block.drain_message(status, observed.knobs)
        return releasing.begin(pool, status, reason=block.ENDING, message=message)
    if status.joinDeadline is not None and now >= status.joinDeadline:
        message = (
            f"Only {ready}/{len(status.instanceIds)} nodes became Ready before the join "
            f"deadline{devices_note(pool, status.readyWithoutDevices)}; releasing the whole "
            f"set and retrying{'' if _any_registered(status, observed) else NONE_JOINED}"
        )
        return releasing.begin(pool, status, reason=FailureReason.JOIN_TIMEOUT, message=message)
    return None


def _quiet_until(launched_at: datetime | None, progress_at: datetime | None) -> datetime | None:
    """Until when a new n/N waits: the quiet start of the join, then the last one's age."""
    if launched_at is None:
        return None
    quiet = launched_at + timedelta(seconds=QUIET_SECONDS)
    if progress_at is None:
        return quiet
    return max(quiet, progress_at + timedelta(seconds=PROGRESS_SECONDS))


def _satisfied(pool: GangNodePool, placed: spread.Placed, now: datetime) -> Plan:
    status = placed.status
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
    satisfied = outcomes.Satisfied(
        nodes=n,
        group=status.activeGroup,
        since_acquiring=None if acquiring is None else (now - acquiring).total_seconds(),
        since_launch=None if launched is None else (now - launched).total_seconds(),
    )
    return Plan(status=new, label_nodes=placed.labels, outcomes=(*placed.outcomes, satisfied))

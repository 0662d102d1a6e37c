"""Values the phases exchange: what was observed, and the plan to carry out."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Unpack

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus, StatusChange
from atomic_gang_provisioner.backoff import exponential
from atomic_gang_provisioner.cloud.types import (
    AcquireRequest,
    Instance,
    ReleaseRequest,
    TopologyRead,
)
from atomic_gang_provisioner.events import Event
from atomic_gang_provisioner.pool.outcomes import Metric, Outcome


@dataclass(frozen=True, slots=True, kw_only=True)
class Knobs:
    """The settings the phases read (from GangSettings, resolved once by
    ``atomic_gang_provisioner.settings``)."""

    cluster: str
    join_deadline: timedelta = timedelta(seconds=600)
    attempts_before_retry: int = 20
    backoff_base: float = 5.0
    backoff_max: float = 300.0
    health_grace: timedelta = timedelta(seconds=60)
    release_poll: float = 5.0
    # ec2Api.describeReuseSeconds: how old a sign of an instance's life a join check takes
    # (an answer of EC2's, or its Node turning Ready); 0 asks EC2 for every gang.
    liveness_window: timedelta = timedelta(seconds=10)
    # capacityBlock.*: the drain point's lead on EndDate, the time a gang needs before
    # it (without min-runtime), and the CapacityBlockEnding warning's lead on it.
    block_drain_lead: timedelta = timedelta(minutes=40)
    block_min_remaining: timedelta = timedelta(minutes=30)
    block_warning_lead: timedelta = timedelta(minutes=10)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """One Node whose providerID names an instance of the pool."""

    name: str
    instance_id: str
    ready: bool  # Ready, not being deleted, and no taint that keeps pods off (nodes.py)
    ready_since: datetime | None = None  # Ready condition's lastTransitionTime
    pool: str | None = None
    group: str | None = None
    topology_labels: tuple[tuple[str, str], ...] = ()  # its network-node-layer labels
    devices: tuple[tuple[str, int], ...] = ()  # extended resources in its allocatable

    def holds(self, wanted: Mapping[str, int]) -> bool:
        """Its allocatable has at least ``wanted`` of each extended resource (a device
        plugin adds them some time after the Node turned Ready)."""
        have = dict(self.devices)
        return all(have.get(name, 0) >= amount for name, amount in wanted.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    nodes: tuple[NodeView, ...] = ()
    instances: tuple[Instance, ...] | None = None  # None: not described this round
    found: tuple[Instance, ...] | None = None  # None: no tag lookup this round
    topology: TopologyRead | None = None  # None: not read this round
    reported_unhealthy: tuple[str, ...] = ()  # of the set, EC2's last answer says not healthy
    progress_written_at: datetime | None = None  # this process's last n/N write while joining
    knobs: Knobs

    def node_for(self, instance_id: str) -> NodeView | None:
        for node in self.nodes:
            if node.instance_id == instance_id:
                return node
        return None


# The one cloud call a decision may make: the type holds at most one.
@dataclass(frozen=True, slots=True)
class Launch:
    """RunInstances (or CreateFleet) for the generation in the request: N or nothing."""

    request: AcquireRequest


@dataclass(frozen=True, slots=True)
class Terminate:
    """Terminate the recorded set (then its fleets and stray ENIs)."""

    request: ReleaseRequest


@dataclass(frozen=True, slots=True)
class DeleteGroup:
    """Delete the pool's own placement group (``status.placementGroup``)."""


CloudCall = Launch | Terminate | DeleteGroup


# What a decision must read before it can decide: the reconciler reads it and decides
# again with the answer in ``Observed``.
@dataclass(frozen=True, slots=True)
class Describe:
    """DescribeInstances of the set (batched with other pools' asks). ``shared``: an
    answer another pool's call got within ec2Api.describeReuseSeconds will do."""

    shared: bool = False


@dataclass(frozen=True, slots=True)
class FindByTag:
    """The live instances tagged with this generation: a set whose launch answer was
    lost. Launches nothing."""

    generation: int


@dataclass(frozen=True, slots=True)
class ReadTopology:
    """One DescribeInstanceTopology of these instances (cached, rate-limited)."""

    instance_ids: tuple[str, ...]


Read = Describe | FindByTag | ReadTopology


@dataclass(frozen=True, slots=True, kw_only=True)
class TagRequest:
    instance_ids: tuple[str, ...]
    tags: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeLabels:
    """Labels to add to one Node (only those it does not carry yet)."""

    node: str
    labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What to do now: the status to write, and either one read to make first (the
    reconciler decides again with its answer) or at most one cloud call."""

    status: GangNodePoolStatus
    call: CloudCall | None = None
    read: Read | None = None
    tag: TagRequest | None = None
    label_nodes: tuple[NodeLabels, ...] = ()
    # Read ahead, the answer only fills the cache: the gang's own read at N Ready is
    # then answered at once instead of waiting for the 1/s budget.
    warm_topology: tuple[str, ...] = ()
    remove_finalizer: bool = False
    # What the decision made happen; each says its Event and metrics (``outcomes.py``).
    outcomes: tuple[Outcome, ...] = ()
    requeue_after: float | None = None

    def __post_init__(self) -> None:
        # A read comes before the decision it informs, so a plan that asks one has not
        # decided a call yet: the reconciler answers the read and decides again.
        if self.read is not None and self.call is not None:
            raise ValueError(
                f"a plan asks a read or makes a cloud call, not both "
                f"(read {type(self.read).__name__}, call {type(self.call).__name__})"
            )

    @property
    def events(self) -> tuple[Event, ...]:
        """The Events the outcomes are announced by, in order."""
        said = (o.announce().event for o in self.outcomes)
        return tuple(e for e in said if e is not None)

    @property
    def metrics(self) -> tuple[Metric, ...]:
        """The metrics the outcomes count, in order."""
        return tuple(m for o in self.outcomes for m in o.announce().metrics)

    @property
    def acquire(self) -> AcquireRequest | None:
        return self.call.request if isinstance(self.call, Launch) else None

    @property
    def release(self) -> ReleaseRequest | None:
        return self.call.request if isinstance(self.call, Terminate) else None

    @property
    def deletes_group(self) -> bool:
        return isinstance(self.call, DeleteGroup)

    def then(self, other: Plan) -> Plan:
        """Chain two steps taken in one reconcile: the later step's status, call and
        read; the outcomes of both; its tag and labels, else the earlier's."""
        return replace(
            other,
            outcomes=self.outcomes + other.outcomes,
            tag=other.tag or self.tag,
            label_nodes=other.label_nodes or self.label_nodes,
        )


def update(status: GangNodePoolStatus, **changes: Unpack[StatusChange]) -> GangNodePoolStatus:
    """``status`` with ``changes``: mypy checks each keyword, and an unknown one raises
    (``model_copy(update=)`` alone would drop a misspelt field silently)."""
    unknown = changes.keys() - GangNodePoolStatus.model_fields.keys()
    if unknown:
        raise TypeError(f"GangNodePoolStatus has no field {', '.join(sorted(unknown))}")
    return status.model_copy(update=changes)


def with_status(pool: GangNodePool, status: GangNodePoolStatus) -> GangNodePool:
    return pool.model_copy(update={"status": status})


def has_resources(status: GangNodePoolStatus) -> bool:
    """Anything recorded that bills or must be cleaned up: instances, fleets, ENIs."""
    return bool(status.instanceIds or status.fleetIds or status.pendingEnis)


def backoff_seconds(*, pool: str, attempt: int, base: float, cap: float) -> float:
    """Equal jitter (half the ceiling left to chance) for attempt 1, 2, ..., deterministic
    in (pool, attempt) so that decide stays pure."""
    digest = hashlib.sha256(f"{pool}/{attempt}".encode()).digest()
    delay = exponential(attempt - 1, base=base, cap=cap, spread=0.5, draw=digest[0] / 255)
    return round(delay, 3)


def seconds_until(when: datetime | None, now: datetime) -> float | None:
    if when is None:
        return None
    return max(0.0, (when - now).total_seconds())


def claim_key(pool: GangNodePool) -> str:
    claim = pool.spec.claim
    return claim.key if claim is not None else ""


@dataclass(frozen=True, slots=True)
class Health:
    """How the pool's live set looks right now."""

    ready: int
    missing: tuple[str, ...] = field(default=())
    not_ready: tuple[str, ...] = field(default=())
    wrong_group: tuple[str, ...] = field(default=())
    without_devices: tuple[str, ...] = field(default=())  # Ready, devices not advertised


def health(
    pool: GangNodePool, observed: Observed, *, devices: Mapping[str, int] | None = None
) -> Health:
    """Where the live set stands; with ``devices``, a Node is Ready only once it holds
    them (the join's rule: one pod of the claimant can land on it)."""
    ready = 0
    missing: list[str] = []
    not_ready: list[str] = []
    wrong: list[str] = []
    bare: list[str] = []
    for iid in pool.status.instanceIds:
        node = observed.node_for(iid)
        if node is None:
            missing.append(iid)
        elif node.group != pool.status.activeGroup or node.pool != pool.name:
            wrong.append(iid)
        elif not node.ready:
            not_ready.append(iid)
        elif not node.holds(devices or {}):
            bare.append(iid)
        else:
            ready += 1
    return Health(ready, tuple(missing), tuple(not_ready), tuple(wrong), tuple(bare))


def devices_note(pool: GangNodePool, count: int) -> str:
    """What a joining gang's messages add for ``count`` Nodes Ready without the devices
    its claimant's pods ask for; "" when there are none."""
    claim = pool.spec.claim
    if not count or claim is None or not claim.resources:
        return ""
    wanted = ", ".join(f"{name}: {amount}" for name, amount in claim.resources.items())
    return (
        f"; {count} more Ready without {wanted} in allocatable "
        "(their device plugin has not registered)"
    )


def dead_instances(pool: GangNodePool, observed: Observed) -> tuple[str, ...]:
    """Instance ids of the set that EC2 no longer reports healthy: gone, terminated,
    stopping or stopped (needs a describe)."""
    assert observed.instances is not None
    healthy = {i.instance_id for i in observed.instances if i.healthy}
    return tuple(i for i in pool.status.instanceIds if i not in healthy)

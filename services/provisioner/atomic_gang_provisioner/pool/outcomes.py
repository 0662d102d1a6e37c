"""What a pool decision made happen, as values: each outcome says once which Event
announces it, which metrics count it, and how it is logged.

A phase's story tells them (``yield outcomes.Released(instances=4)``) and nothing else
about them; each outcome's ``announce`` is the one place that says its Event and metrics, and the
reconciler (``reconcilers/pools.py``) emits, records and logs what it says, all in one
loop. So an Event and the metric of the same fact cannot drift apart, and a newcomer
finds every word the pool says to its claimant here. Messages are written for the claimant:
its AdmissionCheck and ``kubectl describe`` show them as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from atomic_gang_provisioner.api.reasons import FailureReason, Reason
from atomic_gang_provisioner.events import Event, event


# What an outcome counts: each kind is one series of ``metrics.py`` (the reconciler
# records them in one place, ``reconcilers/pools.py`` ``_record``).
@dataclass(frozen=True, slots=True)
class Acquisition:
    """One launch attempt's result (launched, adopted, retry, capacity, quota, permanent)."""

    mode: str
    result: str


@dataclass(frozen=True, slots=True)
class ShortfallCounted:
    """An attempt that fell short, by the reason status records."""

    reason: str


@dataclass(frozen=True, slots=True)
class TimeToSatisfied:
    """From Acquiring to all N Nodes Ready."""

    seconds: float


@dataclass(frozen=True, slots=True)
class JoinDuration:
    """From the launch to all N Nodes Ready."""

    seconds: float


@dataclass(frozen=True, slots=True)
class KeepWarmReuse:
    """A warm set handed to a new claim without a launch."""


@dataclass(frozen=True, slots=True)
class InstancesReleased:
    count: int


@dataclass(frozen=True, slots=True)
class BlockWait:
    """The seconds a gang waited for its reservation's start, once it launches."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Spread:
    """How many network nodes the pool's set spans (a gauge per pool)."""

    pool: str
    nodes: int


@dataclass(frozen=True, slots=True)
class RepairCounted:
    """A repair's end: ``result`` replaced (the gang is whole again) or released (a limit
    was hit and the whole set goes); ``reason`` what broke the first node."""

    pool: str
    reason: str
    result: str


@dataclass(frozen=True, slots=True)
class RepairDuration:
    """From the first broken node's break to all N Nodes Ready again."""

    seconds: float


@dataclass(frozen=True, slots=True)
class KeptInstanceSeconds:
    """What a repair kept that a release of the whole set would have thrown away: the
    healthy instances' time since their launch."""

    seconds: float


Metric = (
    Acquisition
    | RepairCounted
    | RepairDuration
    | KeptInstanceSeconds
    | ShortfallCounted
    | TimeToSatisfied
    | JoinDuration
    | KeepWarmReuse
    | InstancesReleased
    | BlockWait
    | Spread
)


@dataclass(frozen=True, slots=True)
class Announcement:
    """An outcome as the world sees it: the Event (None: said by metrics alone) and the
    metrics it counts."""

    event: Event | None
    metrics: tuple[Metric, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Launched:
    """EC2 launched the gang's N instances, or a lost launch's set was adopted."""

    adopted: bool
    mode: str
    instance_type: str
    zones: tuple[str, ...]
    instance_ids: tuple[str, ...]
    where: str = ""  # the reservation note (``block.where``), "" outside one
    waited: float | None = None  # seconds it waited for its reservation's start

    def announce(self) -> Announcement:
        verb = "Adopted" if self.adopted else "Launched"
        count, ids, zones = (
            len(self.instance_ids),
            " ".join(self.instance_ids),
            ",".join(self.zones),
        )
        text = f"{verb} {count}×{self.instance_type} in {zones}: {ids}{self.where}"
        counted = Acquisition(self.mode, "adopted" if self.adopted else "launched")
        wait = () if self.waited is None else (BlockWait(self.waited),)
        return Announcement(event(verb, text), (counted, *wait))


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchRetried:
    """EC2 asked us to try again (throttled, a transient error): no attempt spent."""

    mode: str

    def announce(self) -> Announcement:
        return Announcement(None, (Acquisition(self.mode, "retry"),))


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptFailed:
    """A launch attempt fell short (capacity), hit a quota, or failed for good."""

    reason: Reason
    result: str  # the acquisitions metric's result: capacity, quota or permanent
    mode: str
    shape: str  # the pool shape's summary
    attempt: int
    attempts: int  # acquireAttemptsBeforeRetry
    detail: str

    @classmethod
    def recorded(
        cls, *, shape: str, attempt: int, attempts: int, reason: Reason, detail: str
    ) -> AttemptFailed:
        """The last failed attempt as status records it (what the conditions say of it)."""
        return cls(
            reason=reason,
            result="",
            mode="",
            shape=shape,
            attempt=attempt,
            attempts=attempts,
            detail=detail,
        )

    @property
    def _numbered(self) -> str:
        return f"attempt {self.attempt}/{self.attempts}"

    def announce(self) -> Announcement:
        text = f"Acquiring {self.shape} ({self._numbered}): {self.detail}; nothing billed"
        counted = (Acquisition(self.mode, self.result), ShortfallCounted(self.reason))
        return Announcement(event(self.reason, text, warning=True), counted)

    def progress(self) -> str:
        """Where the claim stands after it (the Ready condition's message)."""
        return (
            f"Acquiring {self.shape} ({self._numbered}): {self.reason}: {self.detail}; "
            "holding quota, nothing billed"
        )

    def fell_short(self) -> str:
        """The CapacityShortfall condition's message."""
        return f"{self._numbered.capitalize()} fell short: {self.reason}: {self.detail}"


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptFellShort:
    """An attempt counted as fallen short after its launch (a set spread too wide)."""

    reason: FailureReason

    def announce(self) -> Announcement:
        return Announcement(None, (ShortfallCounted(self.reason),))


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitingForReservation:
    """The listed reservation starts later: the gang sleeps until then, unbilled."""

    message: str

    def announce(self) -> Announcement:
        reason = FailureReason.CAPACITY_RESERVATION_NOT_STARTED
        return Announcement(event(reason, f"{self.message}; nothing billed until then"))


@dataclass(frozen=True, slots=True, kw_only=True)
class AcquisitionAbandoned:
    """The claim went before any launch: nothing was billed."""

    def announce(self) -> Announcement:
        text = "The claim was released before a launch; nothing billed"
        return Announcement(event("AcquisitionAbandoned", text))


@dataclass(frozen=True, slots=True, kw_only=True)
class Satisfied:
    """All N Nodes of the group are Ready (and hold their devices)."""

    nodes: int
    group: str
    since_acquiring: float | None = None  # seconds from Acquiring
    since_launch: float | None = None  # seconds from the launch

    def announce(self) -> Announcement:
        timings: list[Metric] = []
        if self.since_acquiring is not None:
            timings.append(TimeToSatisfied(self.since_acquiring))
        if self.since_launch is not None:
            timings.append(JoinDuration(self.since_launch))
        text = f"All {self.nodes} nodes of group {self.group} are Ready"
        return Announcement(event("Satisfied", text), tuple(timings))


@dataclass(frozen=True, slots=True, kw_only=True)
class SpreadMeasured:
    """How many bottom-layer network nodes the gang's set spans."""

    pool: str
    nodes: int

    def announce(self) -> Announcement:
        return Announcement(None, (Spread(self.pool, self.nodes),))


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyUnavailable:
    """EC2 could not say where the set sits: the gang goes on without layer labels."""

    error: str

    def announce(self) -> Announcement:
        text = f"Network topology not readable ({self.error}); the gang goes on without node labels"
        return Announcement(event("TopologyUnavailable", text, warning=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptWarm:
    """The claim dropped and the set stays warm for the next claimant."""

    nodes: int
    until: str  # RFC 3339
    ttl: str  # keep-warm-ttl as the claimant wrote it

    def announce(self) -> Announcement:
        text = (
            f"The claim was released; keeping {self.nodes} nodes warm until {self.until} "
            f"({self.ttl})"
        )
        return Announcement(event("KeepWarm", text))


@dataclass(frozen=True, slots=True, kw_only=True)
class KeepWarmReused:
    """A new claim took the warm set: no launch, no join."""

    nodes: int
    claimant: str  # namespace/name

    def announce(self) -> Announcement:
        text = f"Reusing {self.nodes} warm nodes for {self.claimant}: no launch, no join"
        return Announcement(event("KeepWarmReused", text), (KeepWarmReuse(),))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseStarted:
    """The set is being released: for ``reason`` (a Warning, recorded in status), or as
    planned (``planned``: keep-warm over, a lost launch found; a Normal Event)."""

    reason: str
    message: str
    planned: bool = False

    def announce(self) -> Announcement:
        return Announcement(event(self.reason, self.message, warning=not self.planned))


@dataclass(frozen=True, slots=True, kw_only=True)
class Released:
    """EC2 terminated the set: nothing left billing."""

    instances: int

    def announce(self) -> Announcement:
        text = f"Terminated {self.instances} instance(s); nothing left billing"
        return Announcement(event("Released", text), (InstancesReleased(self.instances),))


@dataclass(frozen=True, slots=True, kw_only=True)
class Degraded:
    """The Satisfied gang broke: its claimant gets Retry and the whole set goes."""

    message: str

    def announce(self) -> Announcement:
        text = (
            f"Gang degraded: {self.message}; releasing the whole set, the Workload will be requeued"
        )
        return Announcement(event("GangDegraded", text, warning=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class NodesBroken:
    """Nodes of the formed gang broke: they are tainted, and replaced in place (``kept``
    healthy ones stay) or, when ``repairing`` is False, the whole set goes."""

    nodes: int
    of: int
    detail: str  # health.describe of each, "; "-joined
    repairing: bool

    def announce(self) -> Announcement:
        then = (
            f"replacing them, {self.of - self.nodes} kept"
            if self.repairing
            else "the whole set is released"
        )
        text = f"{self.nodes} of {self.of} node(s) broken ({self.detail}); {then}"
        return Announcement(event("NodeBroken", text, warning=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairLaunched:
    """The replacements of a repair were launched (one N-or-0 call of k)."""

    instance_ids: tuple[str, ...]
    zones: tuple[str, ...]
    adopted: bool = False

    def announce(self) -> Announcement:
        verb = "Adopted" if self.adopted else "Launched"
        text = (
            f"{verb} {len(self.instance_ids)} replacement(s) in {','.join(self.zones)}: "
            f"{' '.join(self.instance_ids)}"
        )
        return Announcement(event("RepairLaunched", text))


@dataclass(frozen=True, slots=True, kw_only=True)
class NodesReplaced:
    """A repair finished: all N Nodes Ready again, the healthy ones never touched."""

    pool: str
    replaced: tuple[str, ...]  # the broken instance ids
    by: tuple[str, ...]  # their replacements
    reason: str
    seconds: float  # from the break to N Ready
    kept_instance_seconds: float
    repairs: int  # of this claim, this one included

    def announce(self) -> Announcement:
        text = (
            f"Replaced {' '.join(self.replaced)} by {' '.join(self.by)} in "
            f"{self.seconds:.0f}s; the gang is whole again (repair {self.repairs} of this claim)"
        )
        return Announcement(
            event("NodeReplaced", text),
            (
                RepairCounted(self.pool, self.reason, "replaced"),
                RepairDuration(self.seconds),
                KeptInstanceSeconds(self.kept_instance_seconds),
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairGivenUp:
    """A repair hit a limit (``reason``): the whole set goes, the claimant gets Retry."""

    pool: str
    reason: str  # what broke the first node
    limit: str  # the FailureReason of the limit: RepairDeadline, RepairTooManyNodes, ...
    message: str

    def announce(self) -> Announcement:
        return Announcement(
            event(self.limit, self.message, warning=True),
            (RepairCounted(self.pool, self.reason, "released"),),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockDrain:
    """The Capacity Block reached its drain point: the claimant gets Retry."""

    message: str

    def announce(self) -> Announcement:
        return Announcement(event("CapacityBlockDrain", self.message, warning=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockEnding:
    """The Capacity Block's drain point is near: checkpoint now (said once)."""

    message: str

    def announce(self) -> Announcement:
        reason = FailureReason.CAPACITY_BLOCK_ENDING
        return Announcement(event(reason, self.message, warning=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class Finalizing:
    """The pool was deleted with instances recorded: they are terminated first."""

    instances: int

    def announce(self) -> Announcement:
        text = f"Pool deleted: terminating {self.instances} instance(s)"
        return Announcement(event("Finalizing", text))


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupDeleted:
    """The pool's own placement group is gone."""

    name: str

    def announce(self) -> Announcement:
        text = f"Deleted placement group {self.name}"
        return Announcement(event("PlacementGroupDeleted", text))


Outcome = (
    Launched
    | LaunchRetried
    | AttemptFailed
    | AttemptFellShort
    | WaitingForReservation
    | AcquisitionAbandoned
    | Satisfied
    | SpreadMeasured
    | TopologyUnavailable
    | KeptWarm
    | KeepWarmReused
    | ReleaseStarted
    | Released
    | Degraded
    | NodesBroken
    | RepairLaunched
    | NodesReplaced
    | RepairGivenUp
    | BlockDrain
    | BlockEnding
    | Finalizing
    | GroupDeleted
)

"""Frozen value types crossing the cloud boundary: never boto3 dicts.

``Instance`` is what EC2 told us about one instance. ``AcquireRequest`` and the
``AcquireResult`` variants are the contract with the pool state machine: only a
*terminal* result lets the reconciler bump ``acquireGeneration``. Every variant but
``Launched``, a failed ``ReleaseResult`` and a failed ``TopologyRead`` carry a
:class:`FailureReason`: expected outcomes are values, only faults raise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Literal, TypeVar

from atomic_gang import GangSpec, GoDuration, keys
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.reservation_fit import (
    RESERVATION_CODES,
    BlockPolicy,
    Reservation,
)
from atomic_gang_provisioner.timestamps import parse_rfc3339

InstanceState = Literal["pending", "running", "shutting-down", "terminated", "stopping", "stopped"]
# Live: still exists and may bill (cleanup, reaper, adoption must see it).
LIVE_STATES: frozenset[str] = frozenset({"pending", "running", "stopping", "stopped"})
# Healthy: can be (or become) a working gang member; a stopping/stopped one cannot.
HEALTHY_STATES: frozenset[str] = frozenset({"pending", "running"})
Tags = tuple[tuple[str, str], ...]
T = TypeVar("T")


def tag_tuple(tags: dict[str, str]) -> Tags:
    return tuple(sorted(tags.items()))


@dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """One EC2 instance as the engine sees it."""

    instance_id: str
    state: str
    availability_zone: str
    instance_type: str
    launch_time: datetime
    tags: Tags = ()
    client_token: str = ""
    private_dns_name: str = ""
    capacity_reservation_id: str = ""
    lifecycle: str = ""  # InstanceLifecycle: "" (on-demand), "spot", "capacity-block"

    def tag(self, key: str) -> str | None:
        for k, v in self.tags:
            if k == key:
                return v
        return None

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def healthy(self) -> bool:
        """Pending or running: a stopped member breaks the gang even though it is live."""
        return self.state in HEALTHY_STATES

    @property
    def provider_id(self) -> str:
        """The Node's ``spec.providerID`` for this instance."""
        return f"aws:///{self.availability_zone}/{self.instance_id}"

    @property
    def managed(self) -> bool:
        return self.tag(keys.MANAGED) == "true"

    @property
    def pool(self) -> str | None:
        return self.tag(keys.POOL)

    @property
    def generation(self) -> int | None:
        raw = self.tag(keys.GENERATION)
        return int(raw) if raw is not None and raw.isascii() and raw.isdigit() else None

    @property
    def keep_warm_until(self) -> datetime | None:
        return self._parsed(keys.KEEP_WARM_UNTIL, parse_rfc3339)

    @property
    def release_by(self) -> datetime | None:
        """A Capacity Block instance's cap: gone by then, whatever its max lifetime."""
        return self._parsed(keys.RELEASE_BY_TAG, parse_rfc3339)

    @property
    def max_lifetime(self) -> GoDuration | None:
        return self._parsed(keys.MAX_LIFETIME_TAG, GoDuration.parse)

    def _parsed(self, key: str, parse: Callable[[str], T]) -> T | None:
        """A tag's value, parsed; None when it is absent or malformed (anyone may edit tags)."""
        raw = self.tag(key)
        if not raw:
            return None
        try:
            return parse(raw)
        except ValueError:  # DurationError is one
            return None


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownLaunch:
    """A launch EC2 may have accepted without our hearing the answer (a timeout, a lost
    response, a 5xx): its zone and ClientToken. Replayed first by the next attempt,
    since only EC2's answer to that exact request tells whether it made a set."""

    zone: str
    token: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairLaunch:
    """A launch that replaces broken nodes of a formed gang: ``spec.count`` (k) instances
    into the gang's ``zones``, registering with the gang's ``group`` label, so that the
    pods its check pinned land on them. Its own generation (the request's) gives it its
    own ClientTokens and generation tag."""

    zones: tuple[str, ...]
    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AcquireRequest:
    """Acquire ``spec.count`` instances for ``spec.pool`` at ``generation``.

    The same (pool, generation) always derives the same ClientTokens, so
    re-issuing a request after a crash adopts what the first one launched.
    """

    spec: GangSpec
    generation: int
    # How a Capacity Block may be used (drain lead, time needed before the drain point).
    block_policy: BlockPolicy = field(default_factory=BlockPolicy)
    # Reservation ids other pools need: described in the same call as this one's.
    also_reservations: tuple[str, ...] = ()
    # False only when the caller knows no launch at this generation can have happened
    # (it persisted the status that introduced the generation and has not launched since):
    # then the tag lookup before the launch is skipped. The ClientToken still applies.
    adopt: bool = True
    # When the claim started waiting for this pool: the longest-waiting pool goes first
    # for EC2's launch budget and for a capacity cell known to be short.
    waiting_since: datetime | None = None
    # The earlier attempt's launch whose outcome is unknown: sent again, before any other.
    replay: UnknownLaunch | None = None
    # Set for a repair's launch: where the gang is, and the group label it keeps.
    repair: RepairLaunch | None = None

    @property
    def pool(self) -> str:
        return self.spec.pool


@dataclass(frozen=True, slots=True, kw_only=True)
class ZoneAttempt:
    """What one AZ (or the fleet) answered during a sweep."""

    zone: str
    code: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Launched:
    """Exactly N distinct live instances, tagged with the pool and generation."""

    terminal: ClassVar[bool] = True
    instances: tuple[Instance, ...]
    client_token: str
    fleet_id: str | None = None
    adopted: bool = False
    reservation: Reservation | None = None  # the ODCR or Capacity Block launched into

    @property
    def instance_ids(self) -> tuple[str, ...]:
        return tuple(i.instance_id for i in self.instances)


@dataclass(frozen=True, slots=True, kw_only=True)
class Shortfall:
    """Not enough capacity anywhere: nothing is left running or billing."""

    terminal: ClassVar[bool] = True
    reason: ClassVar[FailureReason] = FailureReason.INSUFFICIENT_CAPACITY
    attempts: tuple[ZoneAttempt, ...]
    rolled_back: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        parts = [
            a.message if a.code in RESERVATION_CODES else f"{a.zone}: {a.code}"
            for a in self.attempts
        ]
        return "insufficient capacity (" + "; ".join(parts) + ")"


@dataclass(frozen=True, slots=True, kw_only=True)
class AwaitingReservation:
    """A listed reservation starts later (a Capacity Block, a future-dated ODCR): no
    launch now; try again at ``starts_at`` (None: its start has passed but EC2 does not
    show it active yet)."""

    terminal: ClassVar[bool] = True  # nothing was launched: the next try may use a new token
    reason: ClassVar[FailureReason] = FailureReason.CAPACITY_RESERVATION_NOT_STARTED
    message: str
    starts_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaExceeded:
    """An account limit (vCPU or instance count) blocks the launch."""

    terminal: ClassVar[bool] = True
    reason: ClassVar[FailureReason] = FailureReason.QUOTA_EXCEEDED
    code: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PermanentFailure:
    """Retrying cannot help: AWS's error verbatim, plus what to do about it.

    ``reason`` names the cause for the pool's status and Events, and says whether the
    Job's own annotations are at fault (the check goes Rejected, not Retry).
    """

    terminal: ClassVar[bool] = True
    code: str
    message: str
    hint: str = ""
    reason: FailureReason = FailureReason.PERMANENT_ERROR

    @property
    def rejects(self) -> bool:
        return self.reason.rejects


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryLater:
    """Throttled or transient beyond the retry budget: same generation, same tokens."""

    terminal: ClassVar[bool] = False
    reason: ClassVar[FailureReason] = FailureReason.THROTTLED
    code: str
    message: str
    retry_after: float | None = None  # EC2 throttled: when our bucket has a token again
    # EC2 refused the call unprocessed (throttled): no set of this generation can exist,
    # so the retry of the same ClientToken needs no adoption read first.
    launched_nothing: bool = False
    # The launch whose outcome is unknown: the caller records it before anything else
    # and passes it back as ``AcquireRequest.replay``.
    unknown: UnknownLaunch | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Waiting:
    """No launch was sent: the pool waits its turn (EC2's launch budget, or a capacity
    cell known to be short that a pool ahead of it probes). Not an attempt."""

    terminal: ClassVar[bool] = False
    reason: FailureReason  # WAITING_FOR_LAUNCH_BUDGET or WAITING_FOR_CAPACITY
    message: str
    retry_after: float


AcquireResult = (
    Launched
    | Shortfall
    | QuotaExceeded
    | PermanentFailure
    | RetryLater
    | AwaitingReservation
    | Waiting
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseRequest:
    """Instances (and any fleet) to tear down; ``enis`` are ENIs recorded earlier."""

    instance_ids: tuple[str, ...]
    fleet_ids: tuple[str, ...] = ()
    enis: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseResult:
    """``done`` once every instance is terminated and every recorded ENI is gone.
    ``reason`` and ``message``: a call failed (e.g. throttled); release again later."""

    terminated: tuple[str, ...] = ()
    deleted_enis: tuple[str, ...] = ()
    pending_enis: tuple[str, ...] = ()
    reason: FailureReason | None = None
    message: str = ""
    room_for: tuple[str, ...] = ()  # pools waiting in line for the room this freed

    @property
    def done(self) -> bool:
        return not self.pending_enis and self.reason is None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementGroup:
    """A placement group this cluster's controller created (found by its tags)."""

    name: str
    strategy: str
    pool: str | None = None
    state: str = "available"


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyRead:
    """Each instance's network nodes, top layer first; none for an unsupported type or one
    not running yet. ``retry_after`` > 0: no token was left for the rest, ask again then.
    ``reason`` and ``message``: the call failed (e.g. not authorised); nothing was read."""

    nodes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    retry_after: float = 0.0
    reason: FailureReason | None = None
    message: str = ""

    def of(self, instance_id: str) -> tuple[str, ...]:
        return next((n for iid, n in self.nodes if iid == instance_id), ())

    @property
    def spread(self) -> int:
        """Distinct bottom-layer nodes the instances span (1 is best; 0: none known)."""
        return len({n[-1] for _, n in self.nodes if n})

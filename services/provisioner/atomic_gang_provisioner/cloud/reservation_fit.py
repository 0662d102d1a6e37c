"""Capacity reservations and Capacity Blocks, judged for one gang. Pure.

:func:`judge` says what one reservation is to a gang right now: ``unfit``
(never usable: type, AZ, tenancy, platform, size or a terminal state; the
message names the reservation, the field and both values), ``waiting`` (a
block or future-dated ODCR before its start), ``too-short`` (a block whose
time before its drain point is less than the gang needs), ``ending`` (a block
past its drain point), ``short`` (fewer available than N, or not active) or
``usable``. :func:`choose` judges a Job's ordered list; the adapter launches
into the usable ones in order, and the pool waits, backs off or rejects on
the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, Literal

from atomic_gang import GangSpec, keys
from atomic_gang_provisioner.timestamps import rfc3339

TERMINAL_STATES: Final = frozenset(
    {"expired", "cancelled", "failed", "payment-failed", "unsupported", "cancelling"}
)
WAITING_STATES: Final = frozenset({"scheduled", "payment-pending", "assessing", "delayed"})
# EC2 starts terminating a block's instances this long before its EndDate; we release
# them at least EC2_MARGIN before that.
EC2_BLOCK_TERMINATION_LEAD: Final = timedelta(minutes=30)
EC2_MARGIN: Final = timedelta(minutes=1)
LINUX: Final = "Linux/UNIX"

VerdictKind = Literal["usable", "unfit", "waiting", "too-short", "ending", "short"]
CODES: Final[dict[VerdictKind, str]] = {
    "usable": "",
    "unfit": "CapacityReservationMismatch",
    "waiting": "CapacityReservationNotStarted",
    "too-short": "CapacityBlockTooShort",
    "ending": "CapacityBlockEnding",
    "short": "ReservationCapacityShort",
}
# Codes of verdicts on a reservation: their message says it all (a shortfall shows it).
RESERVATION_CODES: Final = frozenset(code for code in CODES.values() if code)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reservation:
    """An ODCR or a Capacity Block, as DescribeCapacityReservations reports it."""

    reservation_id: str
    instance_type: str
    zone: str
    state: str
    total: int
    available: int
    capacity_block: bool = False
    tenancy: str = "default"
    platform: str = LINUX
    start: datetime | None = None
    end: datetime | None = None
    placement_group_arn: str = ""  # a reservation made inside a cluster placement group

    @property
    def placement_group_name(self) -> str:
        """The cluster placement group the capacity sits in ("" if none)."""
        return self.placement_group_arn.rsplit("/", 1)[-1]

    def drain_point(self, lead: timedelta) -> datetime | None:
        """When a gang in this block must be gone (never, for an ODCR)."""
        return self.end - lead if self.capacity_block and self.end else None

    @property
    def kind_text(self) -> str:
        return "Capacity Block" if self.capacity_block else "Capacity reservation"


def release_by(end: datetime, drain_lead: timedelta) -> datetime:
    """The latest a block's instances are released: from the drain point (the evicted
    pods' grace) up to EC2_MARGIN before EC2's own termination."""
    return max(end - drain_lead, end - EC2_BLOCK_TERMINATION_LEAD - EC2_MARGIN)


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockPolicy:
    """How a gang uses a block: drain this long before its end, and start only with
    ``needed`` left before that drain point (min-runtime, else the setting)."""

    drain_lead: timedelta = timedelta(minutes=40)
    needed: timedelta = timedelta(minutes=30)
    needed_from: str = "capacityBlock.minRemainingSeconds"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    reservation_id: str
    kind: VerdictKind
    message: str
    reservation: Reservation | None = None
    starts_at: datetime | None = None

    @property
    def code(self) -> str:
        return CODES[self.kind]


@dataclass(frozen=True, slots=True)
class Choice:
    """The verdicts on a Job's reservations, in the Job's order."""

    verdicts: tuple[Verdict, ...] = field(default=())

    @property
    def usable(self) -> tuple[Reservation, ...]:
        return tuple(v.reservation for v in self.verdicts if v.kind == "usable" and v.reservation)

    @property
    def rejected(self) -> bool:
        """Not one of them can ever hold this gang: the Job's annotations are wrong."""
        return bool(self.verdicts) and all(v.kind == "unfit" for v in self.verdicts)

    @property
    def wake_at(self) -> datetime | None:
        """The earliest known start among the reservations still to come."""
        starts = [v.starts_at for v in self.verdicts if v.kind == "waiting" and v.starts_at]
        return min(starts) if starts else None

    def of(self, *kinds: VerdictKind) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.kind in kinds)

    @property
    def message(self) -> str:
        return "; ".join(v.message for v in self.verdicts if v.kind != "usable")


def listed(spec: GangSpec) -> tuple[str, ...]:
    """The Job's reservations in order (one id, or a comma-separated list)."""
    return spec.reservation_ids


def iso(when: datetime) -> str:
    return rfc3339(when)


def span(delta: timedelta) -> str:
    """``3h12m``, ``12m``, ``40s``: what a person reads in a message."""
    seconds = max(0, int(delta.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    if hours:
        return f"{hours}h{rest // 60:02d}m"
    return f"{rest // 60}m" if rest >= 60 else f"{rest}s"


def _unfit(res: Reservation, spec: GangSpec, zones: frozenset[str], zone_source: str) -> str | None:
    rid, n = res.reservation_id, spec.count
    if res.state in TERMINAL_STATES:
        return f"{rid} is {res.state} (State); only an active or upcoming one can be used"
    checks = (
        ("instance type", res.instance_type, spec.instance_type, keys.INSTANCE_TYPE),
        ("tenancy", res.tenancy, "default", "the launch template"),
        ("platform", res.platform, LINUX, "the EKS-optimized AMI"),
    )
    for name, theirs, ours, source in checks:
        if theirs != ours:
            return f"{rid} reserves {name} {theirs}; the gang uses {ours} ({source})"
    if res.zone not in zones:
        allowed = ", ".join(sorted(zones)) or "none"
        return f"{rid} is in AZ {res.zone}; the gang may launch in {allowed} ({zone_source})"
    held, asked = res.placement_group_name, spec.placement_group_name
    if held and asked not in (None, held):
        source = keys.PLACEMENT_GROUP_NAME
        return f"{rid} sits in placement group {held}; the gang asks for {asked} ({source})"
    if res.total < n:
        return f"{rid} holds {res.total} instances (TotalInstanceCount); the gang needs {n}"
    return None


def _timing(res: Reservation, now: datetime, policy: BlockPolicy) -> Verdict | None:
    rid = res.reservation_id
    drain = res.drain_point(policy.drain_lead)
    if drain is not None:
        if now >= drain:
            msg = f"Capacity Block {rid} is draining: it ends at {iso(res.end or drain)}"
            return Verdict(reservation_id=rid, kind="ending", message=msg, reservation=res)
        begin = max(now, res.start or now)
        if drain - begin < policy.needed:
            msg = (
                f"Capacity Block {rid} leaves {span(drain - begin)} before its drain point"
                f" {iso(drain)}; the gang needs {span(policy.needed)} ({policy.needed_from})"
            )
            return Verdict(reservation_id=rid, kind="too-short", message=msg, reservation=res)
    upcoming = res.start is not None and now < res.start
    if res.state in WAITING_STATES or (upcoming and res.state != "active"):
        starts = res.start if upcoming else None
        when = (
            f"starts at {iso(starts)} (in {span(starts - now)})"
            if starts
            else f"is not active yet ({res.state})"
        )
        msg = f"{res.kind_text} {rid} {when}"
        return Verdict(
            reservation_id=rid, kind="waiting", message=msg, reservation=res, starts_at=starts
        )
    return None


def judge(
    spec: GangSpec,
    res: Reservation | None,
    *,
    reservation_id: str,
    zones: frozenset[str],
    now: datetime,
    policy: BlockPolicy,
    zone_source: str = keys.AVAILABILITY_ZONES,
) -> Verdict:
    if res is None:
        msg = f"{reservation_id} does not exist (DescribeCapacityReservations) in this account"
        return Verdict(reservation_id=reservation_id, kind="unfit", message=msg)
    unfit = _unfit(res, spec, zones, zone_source)
    if unfit:
        return Verdict(reservation_id=reservation_id, kind="unfit", message=unfit, reservation=res)
    timed = _timing(res, now, policy)
    if timed is not None:
        return timed
    if res.state != "active" or res.available < spec.count:
        msg = (
            f"{reservation_id}: {res.available}/{res.total} available ({res.state});"
            f" the gang needs {spec.count}"
        )
        return Verdict(reservation_id=reservation_id, kind="short", message=msg, reservation=res)
    ends = f", ends {iso(res.end)}" if res.end else ""
    msg = f"{reservation_id} ({res.available}/{res.total} available{ends})"
    return Verdict(reservation_id=reservation_id, kind="usable", message=msg, reservation=res)


def choose(
    spec: GangSpec,
    found: Mapping[str, Reservation | None],
    *,
    zones: Iterable[str],
    now: datetime,
    policy: BlockPolicy,
    order: Sequence[str] | None = None,
) -> Choice:
    """Judge the Job's reservations (``order``, else :func:`listed`) one by one."""
    allowed = frozenset(zones)
    source = keys.AVAILABILITY_ZONES if spec.availability_zones else "the cluster's subnets"
    ids = tuple(order) if order is not None else listed(spec)
    return Choice(
        tuple(
            judge(
                spec,
                found.get(rid),
                reservation_id=rid,
                zones=allowed,
                now=now,
                policy=policy,
                zone_source=source,
            )
            for rid in ids
        )
    )

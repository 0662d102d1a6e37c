"""DescribeCapacityReservations, cached and batched for every pool at once.

:meth:`ReservationBook.get` answers from the cache and, when any asked id is
stale, describes the stale ones of ``ids`` *and* ``also`` (the ids every other
pool needs) in one call per :data:`BATCH` ids. An entry goes stale after the
TTL, when its StartDate or EndDate has passed since it was read (the state has
moved), or when we launched into it (the count has moved). EC2 fails a whole
call on one unknown id; such a batch is halved until the unknown ids are found,
and those are cached as absent too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.parse import when
from atomic_gang_provisioner.cloud.error_codes import NAMED_PERMANENT, CloudError
from atomic_gang_provisioner.cloud.reservation_fit import Choice, Reservation
from atomic_gang_provisioner.cloud.values import (
    AwaitingReservation,
    PermanentFailure,
    Shortfall,
    ZoneAttempt,
)

BATCH = 100


class SawReservation(Protocol):
    """Told each reservation's available count as described (the metrics gauge)."""

    def __call__(self, reservation_id: str, *, kind: str, available: int) -> None: ...


NOT_FOUND = "InvalidCapacityReservationId.NotFound"


def reservation(raw: dict[str, Any]) -> Reservation:
    return Reservation(
        reservation_id=str(raw["CapacityReservationId"]),
        instance_type=str(raw.get("InstanceType", "")),
        zone=str(raw.get("AvailabilityZone", "")),
        state=str(raw.get("State", "")),
        total=int(raw.get("TotalInstanceCount") or 0),
        available=int(raw.get("AvailableInstanceCount") or 0),
        capacity_block=raw.get("ReservationType") == "capacity-block",
        tenancy=str(raw.get("Tenancy") or "default"),
        platform=str(raw.get("InstancePlatform") or ""),
        start=when(raw["StartDate"]) if raw.get("StartDate") else None,
        end=when(raw["EndDate"]) if raw.get("EndDate") else None,
        placement_group_arn=str(raw.get("PlacementGroupArn") or ""),
    )


def attempts_of(choice: Choice) -> list[ZoneAttempt]:
    """The reservations no launch was tried in, as shortfall attempts (list order)."""
    return [
        ZoneAttempt(
            zone=v.reservation.zone if v.reservation else "-", code=v.code, message=v.message
        )
        for v in choice.verdicts
        if v.kind != "usable"
    ]


def unusable(choice: Choice) -> Shortfall | PermanentFailure | AwaitingReservation:
    """No listed reservation can take the gang now: no launch call is made.

    All unfit: the Job is wrong (Rejected). One still to start: wait for it. One short
    of instances: a shortfall (backoff). Only blocks too short or ending: Retry.
    """
    if choice.rejected:
        return PermanentFailure(
            code="CapacityReservationMismatch",
            message=choice.message,
            hint="list reservations of the gang's instance type, AZ and size",
            reason=FailureReason.CAPACITY_RESERVATION_MISMATCH,
        )
    waiting = choice.of("waiting")
    if waiting:
        return AwaitingReservation(
            message="; ".join(v.message for v in waiting), starts_at=choice.wake_at
        )
    ended = choice.of("too-short", "ending")
    if ended and not choice.of("short"):
        return PermanentFailure(
            code=ended[0].code,
            message=choice.message,
            hint="list a later block, or a shorter min-runtime",
            reason=NAMED_PERMANENT[ended[0].code],
        )
    return Shortfall(attempts=tuple(attempts_of(choice)))


class ReservationBook:
    def __init__(
        self,
        *,
        ec2: Any,
        caller: Caller,
        monotonic: Callable[[], float],
        wall: Callable[[], datetime],
        ttl_seconds: float,
        on_read: SawReservation | None = None,
    ) -> None:
        self._ec2 = ec2
        self._on_read = on_read
        self._caller = caller
        self._mono = monotonic
        self._wall = wall
        self._ttl = ttl_seconds
        # id -> (monotonic read time, wall read time, what EC2 said; None = absent)
        self._seen: dict[str, tuple[float, datetime, Reservation | None]] = {}

    def get(self, ids: Sequence[str], *, also: Iterable[str] = ()) -> dict[str, Reservation | None]:
        """What EC2 says of ``ids`` now (None: no such reservation)."""
        if any(self._stale(rid) for rid in ids):
            wanted = [r for r in dict.fromkeys([*ids, *also]) if self._stale(r)]
            for start in range(0, len(wanted), BATCH):
                self._load(wanted[start : start + BATCH])
        return {rid: self._seen[rid][2] for rid in ids}

    def invalidate(self, reservation_id: str) -> None:
        self._seen.pop(reservation_id, None)

    def _stale(self, rid: str) -> bool:
        hit = self._seen.get(rid)
        if hit is None or self._mono() - hit[0] >= self._ttl:
            return True
        read_at, res = hit[1], hit[2]
        now = self._wall()
        boundaries = (res.start, res.end) if res is not None else ()
        return any(b is not None and read_at < b <= now for b in boundaries)

    def _load(self, ids: list[str]) -> None:
        try:
            found = list(
                self._caller.pages(
                    self._ec2,
                    "describe_capacity_reservations",
                    "CapacityReservations",
                    CapacityReservationIds=ids,
                )
            )
        except CloudError as err:
            if err.code != NOT_FOUND:
                raise
            if len(ids) == 1:
                self._remember(ids[0], None)
                return
            half = len(ids) // 2
            self._load(ids[:half])
            self._load(ids[half:])
            return
        by_id = {str(raw.get("CapacityReservationId")): reservation(raw) for raw in found}
        for rid in ids:
            self._remember(rid, by_id.get(rid))

    def _remember(self, rid: str, res: Reservation | None) -> None:
        self._seen[rid] = (self._mono(), self._wall(), res)
        if res is not None and self._on_read is not None:
            kind = "capacity-block" if res.capacity_block else "odcr"
            self._on_read(rid, kind=kind, available=res.available)

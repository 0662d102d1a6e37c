"""The capacity model: free slots per (AZ, instance type) and per reservation.

Live instances use slots; terminating frees them. A launch asking for more
than is free gets EC2's real error and launches nothing. Instances launched
into a capacity reservation count against it (its AvailableInstanceCount), not
against the open pool; a reservation takes launches only while it is active
and, for a Capacity Block, before EC2's termination point. An untargeted launch
lands in an ``open`` ODCR that matches and has room, as on EC2. A subnet without
enough free addresses refuses the whole launch too (moto would launch part of
it and then fail).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from atomic_gang_fakeaws.errors import AwsError, insufficient_capacity
from atomic_gang_fakeaws.reservations import LINUX, CapacityReservation
from atomic_gang_fakeaws.state import FakeState

LIVE = frozenset({"pending", "running", "stopping", "stopped"})
UNLIMITED = 10**9


@dataclass(frozen=True)
class Target:
    zone: str
    instance_type: str
    reservation_id: str | None
    tenancy: str = "default"


def reservation_target(*sources: dict[str, Any]) -> str | None:
    for src in sources:
        spec = src.get("CapacityReservationSpecification") or {}
        rid = (spec.get("CapacityReservationTarget") or {}).get("CapacityReservationId")
        if rid:
            return str(rid)
    return None


def _reservation_used(state: FakeState, backend: Any, reservation_id: str) -> int:
    ids = {iid for iid, rid in state.reservation_use.items() if rid == reservation_id}
    return sum(1 for i in backend.all_instances() if i.id in ids and i.state in LIVE)


def free(state: FakeState, backend: Any, target: Target) -> int:
    """Slots free for this target right now; UNLIMITED when no limit is set."""
    if target.reservation_id:
        res = state.reservations.get(target.reservation_id)
        if res is None or res.refusal(state.wall()) is not None:
            return 0
        return max(0, res.total - _reservation_used(state, backend, res.reservation_id))
    limit = state.limit(target.zone, target.instance_type)
    if limit is None:
        return UNLIMITED
    used = sum(
        1
        for i in backend.all_instances()
        if i.state in LIVE
        and i.availability_zone == target.zone
        and i.instance_type == target.instance_type
        and i.id not in state.reservation_use
    )
    return max(0, limit - used)


def check_addresses(subnet: Any, count: int) -> None:
    """moto would launch part of the gang and then crash when the subnet runs dry."""
    if subnet.available_ip_address_count < count:
        raise AwsError(
            "InsufficientFreeAddressesInSubnet",
            f"The specified subnet {subnet.id} does not have enough free addresses to"
            f" satisfy the request.",
        )


def open_reservation(state: FakeState, backend: Any, target: Target, count: int) -> str | None:
    """The ``open`` ODCR an untargeted launch of ``count`` lands in, if any fits."""
    for res in sorted(state.reservations.values(), key=lambda r: r.created):
        if (
            res.match_criteria == "open"
            and not res.block
            and (res.zone, res.instance_type, res.tenancy)
            == (target.zone, target.instance_type, target.tenancy)
            and free(state, backend, Target(res.zone, res.instance_type, res.reservation_id))
            >= count
        ):
            return res.reservation_id
    return None


def mismatch(res: CapacityReservation, target: Target) -> str | None:
    wanted = (
        ("zone", res.zone, target.zone),
        ("instance type", res.instance_type, target.instance_type),
        ("tenancy", res.tenancy, target.tenancy),
        ("platform", res.platform, LINUX),
    )
    for field, theirs, ours in wanted:
        if theirs != ours:
            rid = res.reservation_id
            return f"Capacity reservation {rid} is for {field} {theirs}, the launch is {ours}"
    return None


def check(state: FakeState, backend: Any, target: Target, count: int) -> None:
    """Raise what EC2 raises when ``count`` instances do not fit; else nothing."""
    rid = target.reservation_id
    if rid:
        res = state.reservations.get(rid)
        if res is None:
            raise AwsError(
                "InvalidCapacityReservationId.NotFound",
                f"The reservation ID '{rid}' does not exist",
            )
        mismatch_ = mismatch(res, target)
        if mismatch_:
            raise AwsError("InvalidParameterValue", mismatch_)
        refusal = res.refusal(state.wall())
        if refusal:
            # EC2 answers a launch before a block's start with a capacity error.
            raise insufficient_capacity(target.instance_type, target.zone, detail=refusal)
        if free(state, backend, target) < count:
            raise AwsError(
                "ReservationCapacityExceeded",
                f"The requested number of instances exceeds the capacity available in {rid}",
            )
        return
    if free(state, backend, target) < count:
        raise insufficient_capacity(target.instance_type, target.zone)

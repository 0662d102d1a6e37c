"""Capacity reservations on moto's side: what a launch asks of one, how its
instances look, DescribeCapacityReservations, and EC2's end-of-block sweep.

* A launch's reservation target, preference, market type and tenancy come from
  the request and, where the request is silent, its launch template (moto
  drops the template's). A Capacity Block must be launched with
  ``MarketType=capacity-block`` and that market needs a block target; the error
  codes for those two misuses are the layer's choice (EC2's are unconfirmed).
* Instances in a reservation carry ``CapacityReservationId`` and its
  specification; a block's have ``InstanceLifecycle=capacity-block`` (moto
  marks any market option ``spot``). DescribeInstances gains the filters
  ``capacity-reservation-id`` and ``instance-lifecycle``.
* :func:`expire_blocks` runs before every call and on the server's ticker: at
  EndDate - 30 min it terminates every instance still live in the block and
  records it (``FakeAws.block_terminations``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moto.core.responses import ActionResult
from moto.ec2 import utils as ec2_utils
from moto.ec2.models import ec2_backends
from moto.ec2.responses import EC2Response

from atomic_gang_fakeaws import capacity
from atomic_gang_fakeaws.errors import AwsError
from atomic_gang_fakeaws.reservations import BlockTermination, CapacityReservation
from atomic_gang_fakeaws.state import FakeState, active

BLOCK_MARKET = "capacity-block"
# The describe filters the layer answers, and the field each one reads.
FILTERS = {
    "instance-type": "InstanceType",
    "availability-zone": "AvailabilityZone",
    "tenancy": "Tenancy",
    "state": "State",
    "instance-platform": "InstancePlatform",
    "instance-match-criteria": "InstanceMatchCriteria",
    "end-date-type": "EndDateType",
    "reservation-type": "ReservationType",
}


@dataclass(frozen=True)
class LaunchIntent:
    """What one launch asks of the reservations."""

    reservation_id: str | None
    preference: str
    market: str | None
    tenancy: str


def launch_intent(request: dict[str, Any], template: dict[str, Any]) -> LaunchIntent:
    """The request's own settings win over its launch template's, field by field."""
    spec_r = request.get("CapacityReservationSpecification") or {}
    spec_t = template.get("CapacityReservationSpecification") or {}
    market_r = request.get("InstanceMarketOptions") or {}
    market_t = template.get("InstanceMarketOptions") or {}
    return LaunchIntent(
        reservation_id=capacity.reservation_target(request, template),
        preference=str(
            spec_r.get("CapacityReservationPreference")
            or spec_t.get("CapacityReservationPreference")
            or "open"
        ),
        market=market_r.get("MarketType") or market_t.get("MarketType"),
        tenancy=str(
            (request.get("Placement") or {}).get("Tenancy")
            or (template.get("Placement") or {}).get("Tenancy")
            or "default"
        ),
    )


def check_market(state: FakeState, intent: LaunchIntent) -> None:
    res = state.reservations.get(intent.reservation_id or "")
    block = res is not None and res.block
    if block and intent.market != BLOCK_MARKET:
        raise AwsError(
            "InvalidParameterCombination",
            f"{intent.reservation_id} is a Capacity Block: launch it with"
            f" InstanceMarketOptions.MarketType={BLOCK_MARKET}",
        )
    if intent.market == BLOCK_MARKET and not block:
        raise AwsError(
            "InvalidParameterCombination",
            f"MarketType {BLOCK_MARKET} needs a Capacity Block as"
            " CapacityReservationTarget.CapacityReservationId",
        )


def target_for(
    state: FakeState, backend: Any, intent: LaunchIntent, *, zone: str, itype: str, count: int
) -> capacity.Target:
    """The reservation a launch lands in: its target, else an open ODCR that fits."""
    rid = intent.reservation_id
    untargeted = capacity.Target(zone, itype, None, intent.tenancy)
    if rid is None and intent.preference == "open" and intent.market is None:
        rid = capacity.open_reservation(state, backend, untargeted, count)
    return capacity.Target(zone, itype, rid, intent.tenancy)


def mark_instances(state: FakeState, instances: list[Any], reservation_id: str | None) -> None:
    """What EC2 shows on an instance in a reservation; and its slot taken."""
    res = state.reservations.get(reservation_id or "")
    if res is None:
        return
    for inst in instances:
        state.reservation_use[inst.id] = res.reservation_id
        inst.capacity_reservation_id = res.reservation_id
        inst.capacity_reservation_specification = {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": res.reservation_id},
        }
        inst.lifecycle = BLOCK_MARKET if res.block else None


def fleet_target(
    state: FakeState, template: dict[str, Any], *, zone: str, itype: str, capacity_type: str
) -> tuple[capacity.Target, str]:
    """An instant fleet override's target, and why it cannot launch ('' if it can)."""
    intent = launch_intent({}, template)
    target = capacity.Target(zone, itype, intent.reservation_id, intent.tenancy)
    res = state.reservations.get(intent.reservation_id or "")
    if intent.reservation_id and res is None:
        return target, f"The reservation ID '{intent.reservation_id}' does not exist"
    if res is not None and capacity.mismatch(res, target):
        return target, str(capacity.mismatch(res, target))
    block = res is not None and res.block and intent.market == BLOCK_MARKET
    if (capacity_type == BLOCK_MARKET) != block:
        return target, (
            f"DefaultTargetCapacityType {capacity_type} and the launch template's"
            f" reservation {intent.reservation_id or 'none'} (market {intent.market or 'none'})"
            " do not go together: a Capacity Block needs both"
        )
    return target, ""


def _live_in(backend: Any, state: FakeState, reservation_id: str) -> list[str]:
    ids = {iid for iid, rid in state.reservation_use.items() if rid == reservation_id}
    return sorted(i.id for i in backend.all_instances() if i.id in ids and i.state in capacity.LIVE)


def expire_blocks(state: FakeState) -> None:
    """EC2's own sweep at EndDate - 30 min, once per block (recorded, even if empty)."""
    now = state.wall()
    with state.lock:
        done = {t.reservation_id for t in state.block_terminations}
        for res in list(state.reservations.values()):
            point = res.termination_point
            if point is None or now < point or res.reservation_id in done:
                continue
            backend = ec2_backends[res.account][res.region]
            ids = _live_in(backend, state, res.reservation_id)
            if ids:
                backend.terminate_instances(ids)
            state.block_terminations.append(
                BlockTermination(res.reservation_id, point, now, tuple(ids))
            )


def _before_any_call(state: FakeState, _: Any) -> None:
    expire_blocks(state)


def _matches(row: dict[str, Any], filters: list[dict[str, Any]]) -> bool:
    for f in filters:
        field = FILTERS.get(str(f.get("Name")))
        if field is None:
            raise AwsError("InvalidParameterValue", f"The filter '{f.get('Name')}' is invalid")
        if str(row.get(field, "")) not in [str(v) for v in f.get("Values") or []]:
            return False
    return True


def _rows(state: FakeState, backend: Any, wanted: list[str]) -> list[dict[str, Any]]:
    known = state.reservations
    missing = [r for r in wanted if r not in known]
    if missing:
        raise AwsError(
            "InvalidCapacityReservationId.NotFound",
            f"The reservation ID '{missing[0]}' does not exist",
        )
    now = state.wall()
    chosen: list[CapacityReservation] = [known[r] for r in dict.fromkeys(wanted)] or sorted(
        known.values(), key=lambda r: r.created
    )
    return [
        res.describe(
            now=now,
            available=capacity.free(
                state, backend, capacity.Target(res.zone, res.instance_type, res.reservation_id)
            ),
        )
        for res in chosen
    ]


def describe_capacity_reservations(self: Any) -> Any:
    state = active()
    if state is None:
        return ActionResult({"CapacityReservations": []})
    with state.lock:
        rows = _rows(state, self.ec2_backend, self._get_param("CapacityReservationIds", []))
    rows = [r for r in rows if _matches(r, self._get_param("Filters", []))]
    size = int(self._get_param("MaxResults") or 1000)
    start = int(self._get_param("NextToken") or 0)
    page: dict[str, Any] = {"CapacityReservations": rows[start : start + size]}
    if start + size < len(rows):
        page["NextToken"] = str(start + size)
    return ActionResult(page)


def install_filters() -> None:
    ec2_utils.filter_dict_attribute_mapping.setdefault(
        "capacity-reservation-id", "capacity_reservation_id"
    )
    ec2_utils.filter_dict_attribute_mapping.setdefault("instance-lifecycle", "lifecycle")


PATCHES: list[tuple[Any, str, Any]] = [
    (EC2Response, "describe_capacity_reservations", describe_capacity_reservations),
]
EVERY = _before_any_call

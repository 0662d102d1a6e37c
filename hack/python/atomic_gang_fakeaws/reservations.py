"""Capacity reservations as EC2 keeps them: ODCRs and Capacity Blocks with a
start, an end, a tenancy, a match criterion and a state that the layer's wall
clock moves (``scheduled`` before StartDate, ``active``, ``expired`` from
EndDate) unless the control API pinned one (``payment-pending`` and the like).

EC2 terminates what still runs in a Capacity Block 30 minutes before its end
(:data:`BLOCK_TERMINATION_LEAD`); the layer refuses launches into a block from
that point on. Pure data here; the moto side lives in ``ec2_reservations``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

ReservationKind = Literal["default", "capacity-block"]
ReservationState = Literal[
    "active",
    "expired",
    "cancelled",
    "pending",
    "failed",
    "scheduled",
    "payment-pending",
    "payment-failed",
    "assessing",
    "delayed",
    "unsupported",
    "cancelling",
    "unavailable",
]
BLOCK_TERMINATION_LEAD = timedelta(minutes=30)
DEFAULT_BLOCK_LENGTH = timedelta(days=1)
LINUX = "Linux/UNIX"


class ReservationSpec(BaseModel):
    """The control API's body (camelCase on the wire, snake_case in Python)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    reservation_id: str = Field(alias="reservationId", pattern=r"^cr-[0-9a-z]+$")
    zone: str = Field(min_length=2)
    instance_type: str = Field(alias="instanceType", min_length=1)
    count: int = Field(ge=1, le=10_000, description="TotalInstanceCount")
    kind: ReservationKind = "default"
    start_date: AwareDatetime | None = Field(default=None, alias="startDate")
    end_date: AwareDatetime | None = Field(default=None, alias="endDate")
    state: ReservationState | None = Field(
        default=None, description="pins the state; None lets the clock move it"
    )
    tenancy: Literal["default", "dedicated"] = "default"
    instance_match_criteria: Literal["open", "targeted"] = Field(
        default="targeted", alias="instanceMatchCriteria"
    )
    platform: str = Field(default=LINUX, alias="instancePlatform")
    placement_group: str | None = Field(
        default=None, alias="placementGroup", description="a cluster placement group it sits in"
    )

    @model_validator(mode="after")
    def _end_after_start(self) -> ReservationSpec:
        if self.start_date and self.end_date and self.end_date <= self.start_date:
            raise ValueError(
                f"endDate {self.end_date.isoformat()} must be after startDate"
                f" {self.start_date.isoformat()}"
            )
        return self

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)


@dataclass
class CapacityReservation:
    reservation_id: str
    zone: str
    instance_type: str
    total: int
    kind: ReservationKind
    start: datetime
    end: datetime | None
    created: datetime
    account: str
    pinned_state: ReservationState | None = None
    tenancy: str = "default"
    match_criteria: str = "targeted"
    platform: str = LINUX
    placement_group: str | None = None

    @classmethod
    def from_spec(
        cls, spec: ReservationSpec, *, now: datetime, account: str
    ) -> CapacityReservation:
        # EC2's dates are whole seconds: the state turns when the advertised date says.
        start = (spec.start_date or now).replace(microsecond=0)
        end = spec.end_date.replace(microsecond=0) if spec.end_date else None
        if end is None and spec.kind == "capacity-block":
            end = start + DEFAULT_BLOCK_LENGTH  # a block always ends
        return cls(
            reservation_id=spec.reservation_id,
            zone=spec.zone,
            instance_type=spec.instance_type,
            total=spec.count,
            kind=spec.kind,
            start=start,
            end=end,
            created=min(now, start),
            pinned_state=spec.state,
            tenancy=spec.tenancy,
            match_criteria=spec.instance_match_criteria,
            platform=spec.platform,
            placement_group=spec.placement_group,
            account=account,
        )

    @property
    def block(self) -> bool:
        return self.kind == "capacity-block"

    @property
    def region(self) -> str:
        return self.zone[:-1]

    @property
    def termination_point(self) -> datetime | None:
        """When EC2 starts terminating a block's instances (never for an ODCR)."""
        return self.end - BLOCK_TERMINATION_LEAD if self.block and self.end else None

    def state_at(self, now: datetime) -> str:
        if self.pinned_state is not None:
            return self.pinned_state
        if now < self.start:
            return "scheduled"
        if self.end is not None and now >= self.end:
            return "expired"
        return "active"

    def refusal(self, now: datetime) -> str | None:
        """Why a launch into it fails now (EC2 answers a capacity error), or None."""
        state = self.state_at(now)
        if state != "active":
            return f"{self.reservation_id} is {state}"
        point = self.termination_point
        if point is not None and now >= point:
            return f"Capacity Block {self.reservation_id} ends at {_iso(self.end)}"
        return None

    def describe(self, *, now: datetime, available: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "CapacityReservationId": self.reservation_id,
            "OwnerId": self.account,
            "CapacityReservationArn": (
                f"arn:aws:ec2:{self.region}:{self.account}:capacity-reservation/"
                f"{self.reservation_id}"
            ),
            "InstanceType": self.instance_type,
            "InstancePlatform": self.platform,
            "AvailabilityZone": self.zone,
            "Tenancy": self.tenancy,
            "TotalInstanceCount": self.total,
            "AvailableInstanceCount": available,
            "State": self.state_at(now),
            "StartDate": self.start,
            "EndDateType": "limited" if self.end else "unlimited",
            "InstanceMatchCriteria": self.match_criteria,
            "CreateDate": self.created,
            "ReservationType": self.kind,
            "Tags": [],
        }
        if self.end is not None:
            out["EndDate"] = self.end
        if self.placement_group:
            out["PlacementGroupArn"] = (
                f"arn:aws:ec2:{self.region}:{self.account}:placement-group/{self.placement_group}"
            )
        if self.block:
            digest = hashlib.sha256(self.reservation_id.encode()).hexdigest()[:17]
            out["CapacityBlockId"] = f"cb-{digest}"
        return out


@dataclass(frozen=True)
class BlockTermination:
    """The layer's own termination of a block's instances (EC2's, in real life)."""

    reservation_id: str
    due: datetime
    ran_at: datetime
    instance_ids: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "reservationId": self.reservation_id,
            "due": _iso(self.due),
            "ranAt": _iso(self.ran_at),
            "instanceIds": list(self.instance_ids),
        }


def _iso(when: datetime | None) -> str:
    return when.isoformat().replace("+00:00", "Z") if when else ""

"""Why a pool's last attempt failed or waits: the one type behind ``status.lastErrorReason``.

Each :class:`FailureReason` knows what it means: retrying cannot help (``permanent``),
the Job itself is at fault (``rejects``), the attempt fell short (``shortfall``: it
counts against acquireAttemptsBeforeRetry and shows as CapacityShortfall), the pool
waits (``waits``: its turn for EC2's launch budget or a short cell, or a reservation
not started) or a Capacity Block's timing is at fault (``block_timing``). The cloud
adapter and the phases produce members; status stores the name, a string on the wire,
and reads it back typed (:data:`Reason`): a name a newer release wrote stays as written,
an :class:`UnknownReason` that means nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Final

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema


class FailureReason(StrEnum):
    """A reason a pool records in ``lastErrorReason``; each is also its Event's reason."""

    NONE = ""  # no error: the last attempt launched, or none was made yet
    # Acquiring: the attempt fell short.
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    QUOTA_EXCEEDED = "QuotaExceeded"
    # Acquiring: no launch was sent, or its answer did not come; not an attempt.
    THROTTLED = "Throttled"
    WAITING_FOR_LAUNCH_BUDGET = "WaitingForLaunchBudget"
    WAITING_FOR_CAPACITY = "WaitingForCapacity"
    CAPACITY_RESERVATION_NOT_STARTED = "CapacityReservationNotStarted"
    # Acquiring: retrying cannot help (the two block ones also release a launched set).
    PERMANENT_ERROR = "PermanentError"  # any permanent AWS error without a reason of its own
    NODE_ROLE_NOT_AUTHORIZED = "NodeRoleNotAuthorized"
    INVALID_SUBNET = "InvalidSubnet"
    CAPACITY_RESERVATION_MISMATCH = "CapacityReservationMismatch"
    CAPACITY_BLOCK_TOO_SHORT = "CapacityBlockTooShort"
    CAPACITY_BLOCK_ENDING = "CapacityBlockEnding"
    EFA_NOT_SUPPORTED = "EfaNotSupported"
    EFA_SECURITY_GROUP = "EfaSecurityGroup"
    PLACEMENT_GROUP_CONFLICT = "PlacementGroupConflict"
    PLACEMENT_GROUP_NOT_FOUND = "PlacementGroupNotFound"
    # A launched set is released (or the gang degraded) for these.
    JOIN_TIMEOUT = "JoinTimeout"
    TOPOLOGY_SPREAD = "TopologySpread"
    INSTANCE_LOST = "InstanceLost"
    NODE_NOT_READY = "NodeNotReady"
    NODE_UNHEALTHY = "NodeUnhealthy"  # a nodeHealth condition (AcceleratedHardwareReady=False)
    # A repair that could not be made or finished: the whole set is released (Retry).
    REPAIR_DEADLINE = "RepairDeadline"
    REPAIR_TOO_MANY_NODES = "RepairTooManyNodes"
    REPAIR_LIMIT = "RepairLimit"
    LEFTOVER = "Leftover"

    @property
    def permanent(self) -> bool:
        """Retrying cannot help: the claimant gets Retry (or Rejected) at once."""
        return TRAITS[self].permanent

    @property
    def rejects(self) -> bool:
        """The Job's own annotations are at fault: its check goes Rejected, not Retry."""
        return TRAITS[self].rejects

    @property
    def shortfall(self) -> bool:
        """The attempt fell short of a gang: it counts as an attempt (consecutiveShortfalls,
        of acquireAttemptsBeforeRetry) and shows as the CapacityShortfall condition."""
        return TRAITS[self].shortfall

    @property
    def waits(self) -> bool:
        """The pool waits (its turn, or a reservation's start): no attempt was spent."""
        return TRAITS[self].waits

    @property
    def block_timing(self) -> bool:
        """Permanent for this start only: the listed blocks end too soon (a requeue may
        find a later one)."""
        return TRAITS[self].block_timing


@dataclass(frozen=True, slots=True, kw_only=True)
class Traits:
    """What one reason means; the properties of :class:`FailureReason` read these."""

    permanent: bool = False
    rejects: bool = False
    shortfall: bool = False
    waits: bool = False
    block_timing: bool = False


_NOTHING: Final = Traits()
_SHORT: Final = Traits(shortfall=True)
_WAIT: Final = Traits(waits=True)
_PERMANENT: Final = Traits(permanent=True)
_REJECTS: Final = Traits(permanent=True, rejects=True)
_BLOCK: Final = Traits(permanent=True, block_timing=True)

_R = FailureReason
# The classification table: one row per reason.
TRAITS: Final[dict[FailureReason, Traits]] = {
    _R.NONE: _NOTHING,
    _R.INSUFFICIENT_CAPACITY: _SHORT,
    _R.QUOTA_EXCEEDED: _SHORT,
    _R.THROTTLED: _NOTHING,
    _R.WAITING_FOR_LAUNCH_BUDGET: _WAIT,
    _R.WAITING_FOR_CAPACITY: _WAIT,
    _R.CAPACITY_RESERVATION_NOT_STARTED: _WAIT,
    _R.PERMANENT_ERROR: _PERMANENT,
    _R.NODE_ROLE_NOT_AUTHORIZED: _PERMANENT,
    _R.INVALID_SUBNET: _REJECTS,
    _R.CAPACITY_RESERVATION_MISMATCH: _REJECTS,
    _R.CAPACITY_BLOCK_TOO_SHORT: _BLOCK,
    _R.CAPACITY_BLOCK_ENDING: _BLOCK,
    _R.EFA_NOT_SUPPORTED: _REJECTS,
    _R.EFA_SECURITY_GROUP: _REJECTS,
    _R.PLACEMENT_GROUP_CONFLICT: _REJECTS,
    _R.PLACEMENT_GROUP_NOT_FOUND: _REJECTS,
    _R.JOIN_TIMEOUT: _SHORT,
    _R.TOPOLOGY_SPREAD: _SHORT,
    _R.INSTANCE_LOST: _NOTHING,
    _R.NODE_NOT_READY: _NOTHING,
    _R.NODE_UNHEALTHY: _NOTHING,
    _R.REPAIR_DEADLINE: _NOTHING,
    _R.REPAIR_TOO_MANY_NODES: _NOTHING,
    _R.REPAIR_LIMIT: _NOTHING,
    _R.LEFTOVER: _NOTHING,
}


class UnknownReason(str):
    """A reason name this release does not know (a newer replica wrote it during a rolling
    upgrade): kept as written, so that messages show it and a write keeps it, and it means
    nothing here (no trait is set)."""

    __slots__ = ()
    permanent: Final = False
    rejects: Final = False
    shortfall: Final = False
    waits: Final = False
    block_timing: Final = False


def read_reason(value: object) -> FailureReason | UnknownReason:
    """The reason a stored status names: a member, or the unknown name as it was written."""
    if isinstance(value, FailureReason | UnknownReason):
        return value
    name = "" if value is None else str(value)
    try:
        return FailureReason(name)
    except ValueError:
        return UnknownReason(name)


# ``status.lastErrorReason`` as the status model holds it: read typed, stored by name.
Reason = Annotated[
    FailureReason | UnknownReason,
    PlainValidator(read_reason),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string"}),
]

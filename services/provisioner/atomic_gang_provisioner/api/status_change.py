"""The status fields as keyword arguments that mypy checks (``pool.model.update``)."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from atomic_gang_provisioner.api.gang_node_pool import (
    Condition,
    PendingLaunch,
    Phase,
    RepairState,
)
from atomic_gang_provisioner.api.reasons import FailureReason


class StatusChange(TypedDict, total=False):
    """The fields of :class:`GangNodePoolStatus`, as keyword arguments that mypy checks
    (``pool.model.update``); a test keeps the two lists equal. ``lastErrorReason`` is
    written as a :class:`FailureReason` and stored as its name (a string on the wire)."""

    phase: Phase
    observedGeneration: int
    claimKey: str
    acquireGeneration: int
    activeGeneration: int
    activeGroup: str
    instanceIds: list[str]
    fleetIds: list[str]
    pendingEnis: list[str]
    readyCount: int
    readyWithoutDevices: int
    acquiringSince: datetime | None
    launchedAt: datetime | None
    joinDeadline: datetime | None
    satisfiedAt: datetime | None
    keepWarmUntil: datetime | None
    consecutiveShortfalls: int
    nextAttemptAt: datetime | None
    lastError: str
    lastErrorReason: FailureReason  # stored by name: a reason is always a member when written
    degradedClaimKey: str
    unhealthySince: datetime | None
    reservationId: str
    reservationEnd: datetime | None
    capacityBlock: bool
    blockEndingWarned: bool
    waitingSince: datetime | None
    placementGroup: str
    pendingLaunch: PendingLaunch | None
    networkNodes: dict[str, list[str]] | None
    spread: int
    zones: list[str]
    repair: RepairState | None
    repairs: int
    conditions: list[Condition]

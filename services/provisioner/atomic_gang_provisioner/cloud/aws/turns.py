"""Whose turn it is to launch: the short capacity cells and EC2's launch budget.

Before a launch, a pool may try only the cells (type, AZ, reservation) no pool ahead
of it is probing, and only when the launch budget comes to it (longest-waiting pool
first); otherwise it gets ``Waiting`` and no call is sent. After the launch, the cells
learn from the answer: a capacity error marks a cell short, a launch clears it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from atomic_gang_provisioner.cloud.aws.launch import LaunchPlan, cell_of
from atomic_gang_provisioner.cloud.capacity import ShortCells
from atomic_gang_provisioner.cloud.errors import classify
from atomic_gang_provisioner.cloud.launchgate import LaunchGate, since_of
from atomic_gang_provisioner.cloud.types import (
    AcquireRequest,
    AcquireResult,
    Launched,
    Shortfall,
    Waiting,
)

CELL_POLL: Final = 2.0  # how often a pool behind a short cell asks again (no EC2 call)


class Turns:
    def __init__(self, *, cells: ShortCells, gate: LaunchGate) -> None:
        self._cells = cells
        self._gate = gate

    def take(self, plan: LaunchPlan, request: AcquireRequest) -> LaunchPlan | Waiting:
        """The placements whose cells this pool may try now, and then its turn for
        EC2's launch budget; or why it waits."""
        since, behind, open_ = since_of(request), [], []
        for placement in plan.placements:
            cell = cell_of(plan, placement.zone)
            ahead = self._cells.turn(cell, pool=request.pool, since=since)
            if ahead:
                behind.append((ahead, cell))
            else:
                open_.append(placement)
        if not open_:
            ahead, cell = min(behind)
            gangs = f"{ahead} gang{'s' if ahead != 1 else ''} ahead"
            message = f"waiting for {cell}: {gangs}"
            return Waiting(reason="WaitingForCapacity", message=message, retry_after=CELL_POLL)
        operation = "create_fleet" if plan.spec.mode == "fleet" else "run_instances"
        waiting = self._gate.admit(request, operation=operation)
        return waiting or replace(plan, placements=tuple(open_))

    def learn(self, plan: LaunchPlan, result: AcquireResult) -> None:
        """A capacity error marks its cell short; a launch there clears it."""
        zones = {p.zone for p in plan.placements}
        if isinstance(result, Shortfall):
            for attempt in result.attempts:
                if attempt.zone in zones and classify(attempt.code) == "capacity":
                    self._cells.mark_short(cell_of(plan, attempt.zone))
        elif isinstance(result, Launched):
            for zone in {i.availability_zone for i in result.instances}:
                self._cells.launched(cell_of(plan, zone), plan.spec.pool)

    def released(self, instance_type: str) -> None:
        """Instances of this type went back: every short cell of it may hold them now."""
        self._cells.released(instance_type)

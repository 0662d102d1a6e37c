"""Whose turn it is to launch: the short capacity cells and EC2's launch budget.

Before a launch, a pool may try only the cells (type, AZ, reservation, group) whose
short line lets it (``cloud.turns.short_cells``), and only when the launch budget comes to it
(longest-waiting pool first); otherwise it gets ``Waiting`` and no call is sent. After
the launch, the cells learn from the answer: a capacity error marks a cell short, a
launch or a release changes what we hold there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.aws.launch import LaunchPlan, cell_of
from atomic_gang_provisioner.cloud.error_codes import classify
from atomic_gang_provisioner.cloud.turns.launchgate import LaunchGate, since_of
from atomic_gang_provisioner.cloud.turns.short_cells import ShortCells
from atomic_gang_provisioner.cloud.values import (
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
            wait = self._cells.turn(cell, pool=request.pool, since=since, count=plan.spec.count)
            if wait is None:
                open_.append(placement)
            else:
                behind.append((wait, cell))
        if not open_:
            wait, cell = min(behind)  # the fewest gangs ahead, the soonest probe
            message = f"waiting for {cell}: {wait.describe()}"
            # The pool that probes next comes back when its probe is due, the rest poll.
            again = min(CELL_POLL, wait.probe_in) if wait.probe_in > 0 else CELL_POLL
            return Waiting(
                reason=FailureReason.WAITING_FOR_CAPACITY, message=message, retry_after=again
            )
        operation = "create_fleet" if plan.spec.mode == "fleet" else "run_instances"
        waiting = self._gate.admit(request, operation=operation)
        return waiting or replace(plan, placements=tuple(open_))

    def learn(self, plan: LaunchPlan, result: AcquireResult) -> None:
        """A capacity error marks its cell short; a launch there takes from its room."""
        zones = {p.zone for p in plan.placements}
        if isinstance(result, Shortfall):
            for attempt in result.attempts:
                if attempt.zone in zones and classify(attempt.code) == "capacity":
                    self._cells.mark_short(cell_of(plan, attempt.zone), plan.spec.count)
        elif isinstance(result, Launched):
            by_zone: dict[str, list[str]] = defaultdict(list)
            for instance in result.instances:
                by_zone[instance.availability_zone].append(instance.instance_id)
            for zone, ids in by_zone.items():
                self._cells.launched(cell_of(plan, zone), plan.spec.pool, ids)

    def released(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        """Instances went back: we hold them in their cells no more. Returns the pools
        waiting for the room they freed."""
        return self._cells.released(instance_ids)

"""A short capacity cell's line: who launches, who probes, who waits (see ``capacity``).

Longest-waiting first. Walking the line in order, a gang that fits the room known free
takes it; the first one after that which fits under the ceiling (or, with none, the
first in line) is the one that probes, when its probe is due; the rest wait. A gang that
has waited ``owed_after`` seconds (``ec2Api.shortCellOwedAfterSeconds``) and does not fit
the room free now is owed the room freed next: nobody behind it launches or probes until
it has launched, so gangs that fit a few freed slots at a time cannot starve it (unless
the ceiling says it cannot fit the cell at all). The walk costs the line's length at most.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from atomic_gang_provisioner.cloud.turns.waitline import WaitLine

HOLD_SECONDS = 60.0  # a waiter that has not asked again for this long has left
OWED_AFTER_SECONDS = 135.0  # by default, a gang waiting this long is owed the room freed next


@dataclass(frozen=True, slots=True)
class Room:
    """What a cell is known to have for us now."""

    sure: int  # instances that fit (the floor, or twice it with no ceiling, less what we hold)
    maybe: int | None  # that may fit (the ceiling less what we hold); None: no ceiling known
    ceiling: int | None  # the most that may fit at all, what we hold included
    probe_at: float  # when the next probe under the ceiling may go
    outside_at: float  # and the next one over it, for capacity freed outside our sight


@dataclass(frozen=True, slots=True, order=True)
class CellWait:
    """Why a pool does not try a short cell now."""

    ahead: int  # gangs ahead of it in the cell's line
    probe_in: float = 0.0  # > 0: it is the one that probes next, in this many seconds

    def describe(self) -> str:
        if self.probe_in > 0:
            return f"next try in {max(1, round(self.probe_in))}s"
        return f"{self.ahead} gang{'s' if self.ahead != 1 else ''} ahead"


class CellLine:
    def __init__(self, *, owed_after: float = OWED_AFTER_SECONDS) -> None:
        self._owed_after = owed_after
        self._line = WaitLine()
        self._counts: dict[str, int] = {}  # pool -> its gang's N

    def turn(
        self, pool: str, *, since: float, count: int, now: float, room: Room
    ) -> CellWait | None:
        """None: ``pool`` launches now. Else why it waits."""
        ahead = self._line.ahead(pool, since=since, now=now, hold=HOLD_SECONDS)
        self._counts[pool] = count
        role = self._role(pool, room, now)
        if role == "launch":
            return None
        if role == "wait":
            return CellWait(ahead)
        due = room.probe_at if role == "probe" else room.outside_at
        return None if now >= due else CellWait(ahead, due - now)

    def _role(
        self, pool: str, room: Room, now: float
    ) -> Literal["launch", "probe", "outside", "wait"]:
        order = self._line.order()
        sure, maybe, prober, seen = room.sure, room.maybe, None, False
        for since, other in order:
            n = self._counts.get(other, 0)
            if n <= sure:
                if other == pool:
                    return "launch"
                sure -= n
                maybe = None if maybe is None else maybe - n
                continue
            if prober is None and (maybe is None or n <= maybe):
                prober = other
            seen = seen or other == pool
            # A gang owed the room freed next: nobody behind it launches or probes.
            owed = now - since >= self._owed_after and (room.ceiling is None or n <= room.ceiling)
            if owed or (seen and prober is not None):
                break
        if prober is not None:
            return "probe" if prober == pool else "wait"
        # Nobody fits under the ceiling: the first probes, for capacity freed outside.
        return "outside" if order and order[0][1] == pool else "wait"

    def waiting(self) -> tuple[str, ...]:
        """The pools in line, longest-waiting first."""
        return tuple(pool for _, pool in self._line.order())

    def leave(self, pool: str) -> None:
        self._line.leave(pool)
        self._counts.pop(pool, None)

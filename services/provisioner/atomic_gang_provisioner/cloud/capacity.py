"""What shortfalls taught us: capacity cells EC2 said are short, and who probes them.

A cell is (instance type, AZ, capacity reservation, cluster placement group). Once
EC2 answers a launch into it with a capacity error, the cell is known short, as
Karpenter keeps unavailable offerings: from then on only the pool that has waited
longest for it probes it (at that pool's own backoff); the others wait behind it
without a call, and can say how many gangs are ahead. A launch that succeeds there, a
release of instances of that type, or ``ttl`` seconds clear it: then every pool may
try again. The clock is injected.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from atomic_gang_provisioner.cloud.waitline import WaitLine

DEFAULT_TTL_SECONDS = 180.0
HOLD_SECONDS = 60.0  # a waiter that has not asked again for this long has left


@dataclass(frozen=True, slots=True, order=True)
class Cell:
    instance_type: str
    zone: str
    reservation: str = ""
    # A cluster placement group holds its own capacity: a pool's own group short says
    # nothing of the AZ, and one named by several Jobs is a cell of their own.
    placement_group: str = ""

    def __str__(self) -> str:
        where = f"{self.instance_type} in {self.zone}"
        inside = [
            x
            for x in (self.reservation, self.placement_group and f"group {self.placement_group}")
            if x
        ]
        return f"{where} ({', '.join(inside)})" if inside else where


class ShortCells:
    def __init__(
        self, *, clock: Callable[[], float], ttl_seconds: float = DEFAULT_TTL_SECONDS
    ) -> None:
        self._clock = clock
        self._ttl = ttl_seconds
        self._until: dict[Cell, float] = {}
        self._lines: dict[Cell, WaitLine] = {}
        self._lock = threading.Lock()

    def mark_short(self, cell: Cell) -> None:
        with self._lock:
            self._until[cell] = self._clock() + self._ttl
            self._lines.setdefault(cell, WaitLine())

    def turn(self, cell: Cell, *, pool: str, since: float) -> int | None:
        """None: the cell is not known short, anyone may try it. Else the gangs ahead of
        ``pool`` in its line: 0 means this pool is the one that probes it."""
        with self._lock:
            now = self._clock()
            until = self._until.get(cell)
            if until is None or until <= now:
                self._clear_locked(cell)
                return None
            line = self._lines[cell]
        return line.ahead(pool, since=since, now=now, hold=HOLD_SECONDS)

    def launched(self, cell: Cell, pool: str) -> None:
        """A launch into ``cell`` succeeded: it has room again."""
        with self._lock:
            self._clear_locked(cell)
            for line in self._lines.values():
                line.leave(pool)

    def released(self, instance_type: str) -> None:
        """Instances of this type were released: their cells have room at once."""
        with self._lock:
            for cell in [c for c in self._until if c.instance_type == instance_type]:
                self._clear_locked(cell)

    def _clear_locked(self, cell: Cell) -> None:
        self._until.pop(cell, None)
        self._lines.pop(cell, None)

"""What shortfalls taught us: capacity cells EC2 said are short, and who may try them.

A cell is (instance type, AZ, capacity reservation, cluster placement group). Once
EC2 answers a launch into it with a capacity error, the cell is known short, as
Karpenter keeps unavailable offerings, and its waiting pools form a line, longest
waiting first. The cell then learns how many instances we can hold in it at once:

- a *floor*, the most we held there at once after a launch (that much fits), and
- a *ceiling*: a shortfall of n while we held h says fewer than h + n fit.

Counting the instances we hold there now, a pool whose gang fits under the floor, after
the pools ahead of it that fit took theirs, launches (a release of 2 lets a 2-gang in).
Between floor and ceiling nothing is known: one pool at a time probes it, the first in
line that fits under the ceiling. Over the ceiling only capacity freed outside our
sight helps: the first in line probes for it, 5 s after the shortfall and then at a
backoff doubling to 10 s while such probes fail. A launch over the ceiling proves the
outside freed some: the ceiling is unknown again, and until a shortfall sets a new one
the gangs that fit in twice the floor launch together. A shortfall under the floor means
the outside took some: the floor comes down. ``ttl`` seconds after its last shortfall
a cell is forgotten. The clock is injected.

We hold what we launched less what we released, as this process saw them (after a
restart the older instances are not counted: the bounds start low, and a launch over
the ceiling corrects them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from atomic_gang_provisioner.cloud.turns.capacity_line import (
    OWED_AFTER_SECONDS,
    CellLine,
    CellWait,
    Room,
)

DEFAULT_TTL_SECONDS = 180.0
PROBE_SECONDS = (5.0, 10.0)  # the first probe over the ceiling, and the longest backoff
CHAIN_SECONDS = 1.0  # between two probes under the ceiling (one at a time)

__all__ = ["DEFAULT_TTL_SECONDS", "OWED_AFTER_SECONDS", "Cell", "CellWait", "ShortCells"]


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


@dataclass(slots=True)
class _Short:
    until: float
    floor: int
    ceiling: int | None
    probe_at: float  # the next probe under the ceiling
    outside_at: float  # the next probe over it
    line: CellLine
    outside_probes_failed: int = 0

    def short_of(self, count: int, held: int, now: float, ttl: float) -> None:
        """EC2 could not launch ``count`` while we held ``held``."""
        self.until = now + ttl
        bound = held + count - 1
        if self.ceiling is None or bound >= self.ceiling:  # a probe for the outside failed
            self.outside_probes_failed += 1
            first, longest = PROBE_SECONDS
            backoff = first * 2 ** (self.outside_probes_failed - 1)
            self.outside_at = now + min(longest, backoff)
        self.ceiling = bound if self.ceiling is None else min(self.ceiling, bound)
        self.floor = min(self.floor, self.ceiling)
        self.probe_at = now + CHAIN_SECONDS

    def launched(self, held: int, now: float) -> None:
        """We hold ``held`` there now, after a launch."""
        self.floor = max(self.floor, held)
        if self.ceiling is not None and held > self.ceiling:
            self.ceiling = None  # the outside freed some: we know no ceiling
            self.outside_probes_failed = 0
        self.probe_at = now + CHAIN_SECONDS

    def room(self, held: int) -> Room:
        # With no ceiling known (the outside freed some), as much again as the floor is
        # tried at once: what fits launches together, doubling with each launch (TCP's
        # slow start) until a shortfall sets a ceiling, rather than one probe at a time.
        fits = self.floor if self.ceiling is not None else 2 * self.floor
        return Room(
            sure=fits - held,
            maybe=None if self.ceiling is None else self.ceiling - held,
            ceiling=self.ceiling,
            probe_at=self.probe_at,
            outside_at=self.outside_at,
        )


class ShortCells:
    def __init__(
        self,
        *,
        clock: Callable[[], float],
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        owed_after_seconds: float = OWED_AFTER_SECONDS,
    ) -> None:
        self._clock = clock
        self._ttl = ttl_seconds
        self._owed_after = owed_after_seconds
        self._short: dict[Cell, _Short] = {}
        self._held: dict[Cell, set[str]] = {}  # every cell, short or not
        self._cell_of: dict[str, Cell] = {}
        self._lock = threading.Lock()

    def mark_short(self, cell: Cell, count: int) -> None:
        """EC2 could not launch ``count`` instances into ``cell``."""
        with self._lock:
            now, held = self._clock(), len(self._held.get(cell, ()))
            short = self._live_locked(cell, now)
            if short is None:
                line = CellLine(owed_after=self._owed_after)
                short = _Short(
                    until=now, floor=held, ceiling=None, probe_at=now, outside_at=now, line=line
                )
                self._short[cell] = short
            short.short_of(count, held, now, self._ttl)

    def turn(self, cell: Cell, *, pool: str, since: float, count: int) -> CellWait | None:
        """None: ``pool`` may try ``cell`` now (it is not known short, the gang fits it,
        or this pool's probe is due). Else why it waits."""
        with self._lock:
            now = self._clock()
            short = self._live_locked(cell, now)
            if short is None:
                return None
            room = short.room(len(self._held.get(cell, ())))
            return short.line.turn(pool, since=since, count=count, now=now, room=room)

    def launched(self, cell: Cell, pool: str, instance_ids: Iterable[str]) -> None:
        """``instance_ids`` went into ``cell`` for ``pool``."""
        with self._lock:
            held = self._held.setdefault(cell, set())
            for iid in instance_ids:
                held.add(iid)
                self._cell_of[iid] = cell
            for waiting in self._short.values():
                waiting.line.leave(pool)
            short = self._short.get(cell)
            if short is not None:
                short.launched(len(held), self._clock())

    def released(self, instance_ids: Iterable[str]) -> tuple[str, ...]:
        """Instances were terminated: we hold them no more (each counted once, however
        often its release is retried). Returns the pools waiting in the lines of the
        short cells that gained room, so that they ask again now, not at their poll."""
        with self._lock:
            freed: set[Cell] = set()
            for iid in instance_ids:
                cell = self._cell_of.pop(iid, None)
                if cell is None:
                    continue
                freed.add(cell)
                held = self._held[cell]
                held.discard(iid)
                if not held:
                    del self._held[cell]
            now, woken = self._clock(), list[str]()
            for cell in sorted(freed):
                short = self._live_locked(cell, now)
                if short is not None:
                    woken.extend(short.line.waiting())
            return tuple(woken)

    def _live_locked(self, cell: Cell, now: float) -> _Short | None:
        short = self._short.get(cell)
        if short is not None and short.until <= now:
            del self._short[cell]
            return None
        return short

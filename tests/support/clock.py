"""A clock tests step: the work queue's clock is any zero-argument callable returning
seconds (``time.monotonic`` in production). ``ManualClock`` tells its listeners when
it moves, so a queue waiting for a delayed key re-checks at once instead of sleeping
in real time. It also stands for the EC2 engine's clocks: ``monotonic`` and ``now``
(wall time, moving with it) read it, and ``sleep`` advances it (and records how long).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1000.0, *, wall: datetime | None = None) -> None:
        self._start = self._now = start
        # Wall time at ``start``; by default the real now (moto stamps launch times with it).
        self._wall = wall or datetime.now(UTC)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self.slept: list[float] = []

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        return self()

    def now(self) -> datetime:
        """Wall time: ``wall`` plus how far the clock has moved."""
        return self._wall + timedelta(seconds=self() - self._start)

    def sleep(self, seconds: float) -> None:
        """A sleeper that returns at once, the clock moved on by ``seconds``."""
        with self._lock:
            self.slept.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go back")
        with self._lock:
            self._now += seconds
            listeners = list(self._listeners)
        for wake in listeners:
            wake()

    def on_advance(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` after every :meth:`advance` (a queue's ``wake``)."""
        with self._lock:
            self._listeners.append(wake)

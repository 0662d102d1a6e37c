"""A clock tests step: the work queue's clock is any zero-argument callable returning
seconds (``time.monotonic`` in production). ``ManualClock`` tells its listeners when
it moves, so a queue waiting for a delayed key re-checks at once instead of sleeping
in real time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def __call__(self) -> float:
        with self._lock:
            return self._now

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

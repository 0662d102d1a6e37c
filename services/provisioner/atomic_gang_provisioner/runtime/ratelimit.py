"""Per-key jittered exponential backoff: client-go's ItemExponentialFailureRateLimiter.

The n-th consecutive failure of a key waits ``min(cap, base * 2**n)`` shrunk by
up to ``jitter`` (a fraction; ``backoff.exponential``), so keys failing together
spread out instead of retrying in lockstep. ``forget`` resets a key after a success.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Hashable

from atomic_gang_provisioner.backoff import exponential


class ExponentialBackoff:
    """Counts failures per key and turns them into delays."""

    def __init__(
        self,
        *,
        base_seconds: float = 0.005,
        cap_seconds: float = 300.0,
        jitter: float = 0.1,
        rng: random.Random | None = None,
    ) -> None:
        if base_seconds <= 0 or cap_seconds < base_seconds:
            raise ValueError("need 0 < base_seconds <= cap_seconds")
        if not 0.0 <= jitter < 1.0:
            raise ValueError("jitter is a fraction in [0, 1)")
        self.base_seconds, self.cap_seconds, self.jitter = base_seconds, cap_seconds, jitter
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not secrets
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, key: Hashable) -> float:
        """Record one more failure of ``key``; return how long to wait before retrying."""
        with self._lock:
            n = self._failures.get(key, 0)
            self._failures[key] = n + 1
            draw = self._rng.random()
        return exponential(
            n, base=self.base_seconds, cap=self.cap_seconds, spread=self.jitter, draw=draw
        )

    def num_requeues(self, key: Hashable) -> int:
        with self._lock:
            return self._failures.get(key, 0)

    def forget(self, key: Hashable) -> None:
        with self._lock:
            self._failures.pop(key, None)

"""Jittered exponential backoff, with the clock and the sleeper injected.

Tests pass a fake sleeper that advances a fake clock, so no test sleeps for
real. The caller retries with identical parameters, hence the same ClientToken.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

Sleeper = Callable[[float], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Full jitter: attempt k waits uniform(0, min(cap, base * 2**k))."""

    max_attempts: int = 5
    base_seconds: float = 0.25
    cap_seconds: float = 8.0
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")

    def delay(self, attempt: int) -> float:
        ceiling = min(self.cap_seconds, self.base_seconds * (2**attempt))
        return self.rng.uniform(0.0, ceiling)


def real_sleeper(seconds: float) -> None:
    time.sleep(seconds)

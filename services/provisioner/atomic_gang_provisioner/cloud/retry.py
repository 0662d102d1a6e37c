"""Jittered exponential backoff, with the clock and the sleeper injected.

Tests pass a fake sleeper that advances a fake clock, so no test sleeps for
real. The caller retries with identical parameters, hence the same ClientToken.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from atomic_gang_provisioner.backoff import exponential

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
        draw = self.rng.uniform(0.0, 1.0)
        return exponential(
            attempt, base=self.base_seconds, cap=self.cap_seconds, spread=1.0, draw=draw
        )


def real_sleeper(seconds: float) -> None:
    time.sleep(seconds)

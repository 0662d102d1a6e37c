"""The idle-cost bench's trace and its ledger (pure).

The trace: gang Jobs (N ∈ {2, 4, 8}, short durations) arriving over a few minutes,
and a capacity schedule for the one instance type that swings between plentiful and
scarce. The same trace drives both provisioners.

The ledger splits every billed instance-second by what the instance's gang was
doing at that moment (sampled):

- ``running``: all N pods of the gang Running (the job makes progress);
- ``booting``: the gang holds N instances but not all N pods run yet (boot, join,
  scheduling: unavoidable for any provisioner);
- ``stranded``: the gang holds 1..N-1 instances, so it cannot run however long it
  waits for boot: a partial set. **This is the idle burn.**
- ``tail``: the job is done and the instances are still billed (release,
  consolidation, keep-warm).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

Use = Literal["running", "booting", "stranded", "tail"]


@dataclass(frozen=True)
class TraceJob:
    name: str
    arrival: float
    count: int
    duration: float


@dataclass(frozen=True)
class Trace:
    jobs: tuple[TraceJob, ...]
    capacity: tuple[tuple[float, int], ...]  # (at second, free slots of the type)

    def slots_at(self, t: float) -> int:
        return [slots for at, slots in self.capacity if at <= t][-1]


DEFAULT_CAPACITY = ((0.0, 20), (45.0, 6), (105.0, 20), (150.0, 5), (210.0, 24))


def make_trace(*, jobs: int = 48, seed: int = 7, window: float = 200.0) -> Trace:
    """Deterministic: the same seed gives both provisioners the same trace."""
    rng = random.Random(seed)
    sizes = [2] * 18 + [4] * 18 + [8] * 12
    rng.shuffle(sizes)
    arrivals = sorted(rng.uniform(0, window) for _ in range(jobs))
    return Trace(
        jobs=tuple(
            TraceJob(
                name=f"j{i:02d}-n{sizes[i % len(sizes)]}",
                arrival=round(arrivals[i], 1),
                count=sizes[i % len(sizes)],
                duration=round(rng.uniform(10, 30), 1),
            )
            for i in range(jobs)
        ),
        capacity=DEFAULT_CAPACITY,
    )


def classify(*, live: int, count: int, running: int, done: bool) -> Use:
    if done:
        return "tail"
    if running >= count:
        return "running"
    return "booting" if live >= count else "stranded"


@dataclass
class Ledger:
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    peak_stranded: int = 0
    # Slot-seconds of free capacity while a waiting gang's missing instances would have
    # fitted it: capacity the provisioner had not found or not taken yet.
    free_while_fitting: float = 0.0

    def add(self, dt: float, uses: list[tuple[Use, int]]) -> None:
        """One sample: ``(use, instances)`` per pool with live instances, held for ``dt``."""
        stranded = 0
        for use, n in uses:
            self.seconds[use] += n * dt
            stranded += n if use == "stranded" else 0
        self.peak_stranded = max(self.peak_stranded, stranded)

    def add_free(self, dt: float, free: int, missing: list[int]) -> None:
        """One sample: ``free`` slots, and each waiting gang's missing instances."""
        if missing and 0 < min(missing) <= free:
            self.free_while_fitting += free * dt

    @property
    def billed(self) -> float:
        return float(sum(self.seconds.values()))

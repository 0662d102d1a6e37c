"""The idle-cost trace replayed in simulated time against the real short-cell code.

``bench.idle_cost`` takes about 20 minutes a run and moves from run to run; this replays
the same trace (``bench/idle_trace.py``) through ``cloud.turns.short_cells.ShortCells`` on an
injected clock, a few runs a second, to compare line policies before
spending a real run on one. Each run jitters the stack's latencies (submission, the
2 s poll, boot and join, release) by 0.7–1.4×, by its seed; the backoff after a
shortfall is the pool's own (``acquireRetry`` 1–5 s, as the bench sets it), and a
release wakes the pools in line at once, as the controller does.

Launches spend the controller's own launch budget (``cloud.turns.budget``, longest-waiting
first). The first line printed is the bench's "today": no short cells, every pool
retrying at its backoff; the lines after it are the cache, per variant, from the same
seeds. The model is rougher than the stack (no reconcile latency, one cell), so its
figures differ from the real bench's: use it for direction, never as the figure.

Usage: .venv/bin/python -m bench.idle_replay [--runs 80] [--owed 135,1e9]
       [--probe-max 15,30]

``--owed`` and ``--probe-max`` set, per variant, how long a gang waits before it is owed
the room freed next (``ec2Api.shortCellOwedAfterSeconds``; ``1e9``: never) and the
longest backoff of the outside probe (``short_cells.PROBE_SECONDS``).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from atomic_gang_provisioner.cloud.turns import capacity_line, short_cells
from atomic_gang_provisioner.cloud.turns.budget import ApiBudget, BudgetLimits
from atomic_gang_provisioner.cloud.turns.short_cells import Cell, ShortCells
from atomic_gang_provisioner.cloud.turns.waitline import WaitLine
from atomic_gang_provisioner.pool.model import backoff_seconds
from bench.idle_trace import TraceJob, make_trace
from bench.system_stack import pct

CELL = Cell("p4d.24xlarge", "us-east-1a")
LAG, POLL, BOOT, RELEASE = 0.4, 2.0, 4.5, 0.3  # seconds, before jitter


@dataclass(frozen=True)
class Outcome:
    finished: int
    failed: int
    p50: float
    max: float


class _LaunchBudget:
    """The controller's launch budget (``cloud.turns.budget``), longest-waiting first, as the
    launch gate spends it: a pool may go when the bucket holds a token for it and one
    for each pool ahead of it; else it asks again when they will be there."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._budget = ApiBudget(limits=BudgetLimits(), clock=clock)
        self._line = WaitLine()

    def wait(self, pool: str, *, since: float, count: int) -> float:
        """0: the launch call goes now and takes its tokens. Else seconds to wait."""
        now = self._clock()
        ahead = self._line.ahead(pool, since=since, now=now, hold=60.0)
        wait = self._budget.take("run_instances", instances=count, reserve=ahead)
        if wait <= 0:
            self._line.leave(pool)
        return wait


class _Run:
    """One run of the trace on a simulated clock: events in time order."""

    def __init__(self, seed: int, *, owed_after: float, cache_off: bool) -> None:
        self.rng = random.Random(seed)
        self.trace, self.now, self.order = make_trace(), 0.0, itertools.count()
        self.cells = ShortCells(clock=lambda: self.now, owed_after_seconds=owed_after)
        self.budget = _LaunchBudget(clock=lambda: self.now)
        self.cache_off = cache_off
        self.jobs = {job.name: job for job in self.trace.jobs}
        self.since = {job.name: job.arrival + self.jitter(LAG) for job in self.trace.jobs}
        self.events: list[tuple[float, int, str, TraceJob]] = []
        self.held, self.failed = 0, 0
        self.attempts: dict[str, int] = {}
        self.launched: set[str] = set()
        self.done: dict[str, float] = {}

    def jitter(self, seconds: float) -> float:
        return seconds * self.rng.uniform(0.7, 1.4)

    def at(self, t: float, kind: str, job: TraceJob) -> None:
        heapq.heappush(self.events, (t, next(self.order), kind, job))

    def run(self) -> Outcome:
        for job in self.trace.jobs:
            self.at(self.since[job.name], "try", job)
        while self.events:
            self.now, _, kind, job = heapq.heappop(self.events)
            ids = [f"{job.name}-{k}" for k in range(job.count)]
            if kind == "done":
                self.done[job.name] = self.now - job.arrival
                self.at(self.now + self.jitter(RELEASE), "release", job)
            elif kind == "release":
                self.held -= job.count
                for woken in self.cells.released(ids):  # they ask at once
                    self.at(self.now, "try", self.jobs[woken])
            elif job.name not in self.launched:  # else a poll queued before a wake
                self.ask(job, ids)
        completion = list(self.done.values())
        return Outcome(len(self.done), self.failed, pct(completion, 0.5), max(completion))

    def ask(self, job: TraceJob, ids: list[str]) -> None:
        since = self.since[job.name]
        if not self.cache_off and (
            wait := self.cells.turn(CELL, pool=job.name, since=since, count=job.count)
        ):
            again = min(POLL, wait.probe_in) if wait.probe_in > 0 else POLL
            self.at(self.now + self.jitter(again), "try", job)
        elif (pause := self.budget.wait(job.name, since=since, count=job.count)) > 0:
            self.at(self.now + max(0.05, pause), "try", job)
        else:
            self.attempt(job, ids)

    def attempt(self, job: TraceJob, ids: list[str]) -> None:
        if self.held + job.count <= self.trace.slots_at(self.now):
            self.held += job.count
            self.launched.add(job.name)
            self.cells.launched(CELL, job.name, ids)
            self.at(self.now + self.jitter(BOOT) + job.duration, "done", job)
            return
        self.failed += 1
        n = self.attempts[job.name] = self.attempts.get(job.name, 0) + 1
        self.cells.mark_short(CELL, job.count)
        delay = backoff_seconds(pool=job.name, attempt=n, base=1, cap=5)
        self.at(self.now + delay, "try", job)


def replay(
    seed: int, *, owed_after: float = capacity_line.OWED_AFTER_SECONDS, cache_off: bool = False
) -> Outcome:
    """One run; ``cache_off``: no short cells, every pool retries at its backoff (the
    bench's "today"), still within the launch budget."""
    return _Run(seed, owed_after=owed_after, cache_off=cache_off).run()


def summary(outcomes: list[Outcome]) -> str:
    p50s, maxes = [o.p50 for o in outcomes], [o.max for o in outcomes]
    failed = statistics.mean(o.failed for o in outcomes)
    return (
        f"failed RunInstances {failed:.0f} | completion p50 mean {statistics.mean(p50s):.1f} s "
        f"(p10 {pct(p50s, 0.1):.1f}, p90 {pct(p50s, 0.9):.1f}) | max mean "
        f"{statistics.mean(maxes):.1f} s (p90 {pct(maxes, 0.9):.1f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=80, help="seeds per variant")
    ap.add_argument("--owed", default=str(capacity_line.OWED_AFTER_SECONDS))
    ap.add_argument("--probe-max", default=str(short_cells.PROBE_SECONDS[1]))
    args = ap.parse_args()
    first = short_cells.PROBE_SECONDS[0]
    today = [replay(seed, cache_off=True) for seed in range(args.runs)]
    print(f"cache off (today): {summary(today)}")
    for owed, longest in itertools.product(args.owed.split(","), args.probe_max.split(",")):
        short_cells.PROBE_SECONDS = (first, float(longest))
        outcomes = [replay(seed, owed_after=float(owed)) for seed in range(args.runs)]
        print(f"owed after {owed} s, outside probe up to {longest} s: {summary(outcomes)}")


if __name__ == "__main__":
    main()

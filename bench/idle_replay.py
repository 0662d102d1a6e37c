"""The idle-cost trace replayed in simulated time against the real short-cell code.

``bench.idle_cost`` takes about 20 minutes a run and moves from run to run; this replays
the same trace (``bench/idle_trace.py``) through ``cloud.capacity.ShortCells`` on an
injected clock in about a second per hundred runs, to compare line policies before
spending a real run on one. Each run jitters the stack's latencies (submission, the
2 s poll, boot and join, release) by 0.7–1.4×, by its seed; the backoff after a
shortfall is the pool's own (``acquireRetry`` 1–5 s, as the bench sets it), and a
release wakes the pools in line at once, as the controller does.

The model is rougher than the stack (no launch budget, no reconcile latency), so its
medians run 15–20 s under the real bench's: use it for direction, never as the figure.

Usage: .venv/bin/python -m bench.idle_replay [--runs 80] [--owed 135,1e9]
       [--probe-max 15,30]

``--owed`` and ``--probe-max`` set, per variant, how long a gang waits before it is owed
the room freed next (``ec2Api.shortCellOwedAfterSeconds``; ``1e9``: never) and the
longest backoff of the outside probe (``capacity.PROBE_SECONDS``).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import random
import statistics
from dataclasses import dataclass

from atomic_gang_provisioner.cloud import capacity, capacity_line
from atomic_gang_provisioner.cloud.capacity import Cell, ShortCells
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


def replay(seed: int, *, owed_after: float = capacity_line.OWED_AFTER_SECONDS) -> Outcome:
    rng = random.Random(seed)

    def jitter(seconds: float) -> float:
        return seconds * rng.uniform(0.7, 1.4)

    trace, now, order = make_trace(), [0.0], itertools.count()
    cells = ShortCells(clock=lambda: now[0], owed_after_seconds=owed_after)
    events: list[tuple[float, int, str, TraceJob]] = []
    since: dict[str, float] = {}
    launched: set[str] = set()
    held, failed, attempts, done = 0, 0, dict[str, int](), dict[str, float]()

    def at(t: float, kind: str, job: TraceJob) -> None:
        heapq.heappush(events, (t, next(order), kind, job))

    jobs = {job.name: job for job in trace.jobs}
    for job in trace.jobs:
        since[job.name] = job.arrival + jitter(LAG)
        at(since[job.name], "try", job)
    while events:
        now[0], _, kind, job = heapq.heappop(events)
        ids = [f"{job.name}-{k}" for k in range(job.count)]
        if kind == "done":
            done[job.name] = now[0] - job.arrival
            at(now[0] + jitter(RELEASE), "release", job)
        elif kind == "release":
            held -= job.count
            for woken in cells.released(ids):  # they ask at once, their poll stays queued
                at(now[0], "try", jobs[woken])
        elif job.name in launched:
            continue  # a poll queued before a wake launched it
        elif wait := cells.turn(CELL, pool=job.name, since=since[job.name], count=job.count):
            again = min(POLL, wait.probe_in) if wait.probe_in > 0 else POLL
            at(now[0] + jitter(again), "try", job)
        elif held + job.count <= trace.slots_at(now[0]):
            held += job.count
            launched.add(job.name)
            cells.launched(CELL, job.name, ids)
            at(now[0] + jitter(BOOT) + job.duration, "done", job)
        else:
            failed += 1
            attempts[job.name] = attempts.get(job.name, 0) + 1
            cells.mark_short(CELL, job.count)
            delay = backoff_seconds(pool=job.name, attempt=attempts[job.name], base=1, cap=5)
            at(now[0] + delay, "try", job)
    completion = list(done.values())
    return Outcome(len(done), failed, pct(completion, 0.5), max(completion))


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
    ap.add_argument("--probe-max", default=str(capacity.PROBE_SECONDS[1]))
    args = ap.parse_args()
    first = capacity.PROBE_SECONDS[0]
    for owed, longest in itertools.product(args.owed.split(","), args.probe_max.split(",")):
        capacity.PROBE_SECONDS = (first, float(longest))
        outcomes = [replay(seed, owed_after=float(owed)) for seed in range(args.runs)]
        print(f"owed after {owed} s, outside probe up to {longest} s: {summary(outcomes)}")


if __name__ == "__main__":
    main()

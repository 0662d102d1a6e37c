"""What counting one admission review costs in process: the webhook's ReviewTally
(plain ints, turned into samples only on scrape) against the stock prometheus_client
collectors, with their label children cached (the fair way to use them) and with
``.labels()`` on every call.

A valid review counts one review and one latency; a denial one review, three
violations and one latency. Best of 7 x 100,000, in µs. The end-to-end side of the
comparison is ``bench.webhook_ab --rev <a revision with stock collectors>``.

Usage: .venv/bin/python -m bench.review_metrics
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from atomic_gang_webhook.metrics import BUCKETS, ReviewTally

REASONS = ("InvalidMode", "InvalidAmiId", "CountMismatch")


class StockCached:
    """Stock Counter and Histogram, each label child looked up once."""

    def __init__(self) -> None:
        reg = CollectorRegistry()
        self._r = Counter("r", "r", ["operation", "verdict", "reason"], registry=reg)
        self._v = Counter("v", "v", ["reason"], registry=reg)
        self._l = Histogram("l", "l", buckets=BUCKETS, registry=reg)
        self._children: dict[object, Any] = {}

    def review(self, operation: str, verdict: str, reason: str) -> None:
        key = (operation, verdict, reason)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._r.labels(*key)
        child.inc()

    def violation(self, reason: str) -> None:
        child = self._children.get(reason)
        if child is None:
            child = self._children[reason] = self._v.labels(reason)
        child.inc()

    def observe(self, seconds: float) -> None:
        self._l.observe(seconds)


class LabelsEachTime:
    def __init__(self) -> None:
        reg = CollectorRegistry()
        self._r = Counter("r", "r", ["operation", "verdict", "reason"], registry=reg)
        self._v = Counter("v", "v", ["reason"], registry=reg)
        self._l = Histogram("l", "l", buckets=BUCKETS, registry=reg)

    def review(self, operation: str, verdict: str, reason: str) -> None:
        self._r.labels(operation, verdict, reason).inc()

    def violation(self, reason: str) -> None:
        self._v.labels(reason).inc()

    def observe(self, seconds: float) -> None:
        self._l.observe(seconds)


Tally = ReviewTally | StockCached | LabelsEachTime


def valid(t: Tally) -> Callable[[], None]:
    def run() -> None:
        t.review("CREATE", "allowed", "Valid")
        t.observe(0.0002)

    return run


def denial(t: Tally) -> Callable[[], None]:
    def run() -> None:
        t.review("CREATE", "denied", "InvalidMode")
        for r in REASONS:
            t.violation(r)
        t.observe(0.0002)

    return run


def main() -> None:
    subjects: dict[str, Tally] = {
        "ReviewTally (plain ints)": ReviewTally(),
        "stock, label children cached": StockCached(),
        "stock, .labels() on every call": LabelsEachTime(),
    }
    print("| counting | valid review µs | denial (3 violations) µs |")
    print("|---|---|---|")
    for name, t in subjects.items():
        cells = []
        for case in (valid, denial):
            best = min(timeit.repeat(case(t), number=100_000, repeat=7)) / 100_000
            cells.append(f"{best * 1e6:.2f}")
        print(f"| {name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()

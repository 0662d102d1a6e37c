"""EC2's API throttling as token buckets, per account and region.

Figures from the EC2 throttling page: RunInstances 5 burst at 2/s (and 1000
instances at 2/s), TerminateInstances 100 at 5/s (1000 instances at 20/s),
CreateTags 100 at 10/s, DescribeInstanceTopology 1 at 1/s (reported, not
documented), other mutating calls 50 at 5/s, non-mutating 100 at 20/s. A call
is refused (RequestLimitExceeded, 503) if any bucket is short.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

REQUEST_BUCKETS: dict[str, tuple[float, float]] = {
    "RunInstances": (5, 2),
    "TerminateInstances": (100, 5),
    "CreateTags": (100, 10),
    "DescribeInstanceTopology": (1, 1),  # its own, tiny budget
}
RESOURCE_BUCKETS: dict[str, tuple[float, float]] = {
    "RunInstances": (1000, 2),
    "TerminateInstances": (1000, 20),
}
MUTATING = (50.0, 5.0)
NON_MUTATING = (100.0, 20.0)


def _request_bucket(action: str) -> tuple[str, tuple[float, float]]:
    if action in REQUEST_BUCKETS:
        return action, REQUEST_BUCKETS[action]
    if action.startswith(("Describe", "Get", "List")):
        return "non-mutating", NON_MUTATING
    return "mutating", MUTATING


@dataclass
class Bucket:
    capacity: float
    rate: float
    level: float
    stamp: float

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now


class Throttler:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.enabled = True
        self._buckets: dict[tuple[str, str, str], Bucket] = {}

    def _bucket(self, scope: str, name: str, spec: tuple[float, float], now: float) -> Bucket:
        key = (scope, name, "")
        if key not in self._buckets:
            self._buckets[key] = Bucket(spec[0], spec[1], spec[0], now)
        bucket = self._buckets[key]
        bucket.refill(now)
        return bucket

    def admit(self, *, scope: str, action: str, resources: int) -> bool:
        """Take tokens for one EC2 call; False (and nothing taken) when throttled."""
        if not self.enabled:
            return True
        now = self.clock()
        name, spec = _request_bucket(action)
        wanted = [(self._bucket(scope, name, spec, now), 1.0)]
        if action in RESOURCE_BUCKETS and resources:
            res = self._bucket(scope, action + "/resources", RESOURCE_BUCKETS[action], now)
            wanted.append((res, float(resources)))
        if any(b.level < n for b, n in wanted):
            return False
        for b, n in wanted:
            b.level -= n
        return True

    def reset(self) -> None:
        self._buckets.clear()

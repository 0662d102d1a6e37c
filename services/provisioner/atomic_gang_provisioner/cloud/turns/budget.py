"""Our own EC2 API budget: token buckets that mirror EC2's, per action class.

EC2 throttles per account and Region with token buckets (RunInstances: 5 requests
burst at 2/s, and 1,000 instances at 2/s; other mutating actions 50 at 5/s;
non-mutating 100 at 20/s). The engine takes a token here before each call, so the
controller never drives itself into ``RequestLimitExceeded``; when EC2 throttles
anyway (other launchers in the account), :meth:`ApiBudget.throttled` empties the
class's bucket, since EC2 just said its own is empty. The clock is injected.

Each request bucket holds one token less than EC2's: EC2 counts a call when it
arrives, and calls sent half a second apart can arrive closer (queues on the way),
so a bucket that mirrored EC2's exactly would now and then find EC2's one token
short. The token kept in hand absorbs that, at a cost of one burst call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

ActionClass = Literal["run_instances", "mutating", "non_mutating"]
LAUNCH_INSTANCES: Final = "run_instances/instances"
READ_PREFIXES: Final = ("describe_", "get_", "list_")
EPSILON: Final = 1e-6  # of a token: float refills never quite reach a whole one
HEADROOM: Final = 1.0  # request tokens of EC2's bucket we never count on (see above)


@dataclass(frozen=True, slots=True)
class BucketSpec:
    capacity: float
    per_second: float

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.per_second <= 0:
            raise ValueError("a bucket needs capacity >= 1 and a positive refill rate")


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetLimits:
    """EC2's published defaults; an account with raised limits sets its own."""

    run_instances: BucketSpec = BucketSpec(5, 2)
    run_instances_instances: BucketSpec = BucketSpec(1000, 2)
    mutating: BucketSpec = BucketSpec(50, 5)
    non_mutating: BucketSpec = BucketSpec(100, 20)


def action_class(operation: str) -> ActionClass:
    """The bucket a boto3 operation name (``run_instances``) draws from."""
    if operation == "run_instances":
        return "run_instances"
    return "non_mutating" if operation.startswith(READ_PREFIXES) else "mutating"


class TokenBucket:
    """``capacity`` tokens, refilled at ``per_second``; not locked (ApiBudget locks)."""

    def __init__(self, spec: BucketSpec, now: float) -> None:
        self.spec = spec
        self.level = spec.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        gained = max(0.0, now - self.stamp) * self.spec.per_second
        self.level = min(self.spec.capacity, self.level + gained)
        self.stamp = max(self.stamp, now)

    def wait(self, n: float, reserve: float = 0.0) -> float:
        """Seconds until ``n`` tokens, plus ``reserve`` left over, are here (after a
        refill); 0 when they are. A request larger than the bucket waits for a full one."""
        short = min(n, self.spec.capacity) + reserve - self.level
        return short / self.spec.per_second if short > EPSILON else 0.0


def _in_hand(spec: BucketSpec) -> BucketSpec:
    """EC2's request bucket less the headroom (a bucket of 1 stays 1)."""
    return BucketSpec(max(1.0, spec.capacity - HEADROOM), spec.per_second)


class ApiBudget:
    """The buckets of every action class, shared by every caller of one engine."""

    def __init__(self, *, limits: BudgetLimits, clock: Callable[[], float]) -> None:
        self._clock = clock
        now = clock()
        self._buckets: dict[str, TokenBucket] = {
            "run_instances": TokenBucket(_in_hand(limits.run_instances), now),
            LAUNCH_INSTANCES: TokenBucket(limits.run_instances_instances, now),
            "mutating": TokenBucket(_in_hand(limits.mutating), now),
            "non_mutating": TokenBucket(_in_hand(limits.non_mutating), now),
        }
        self._lock = threading.Lock()

    def _wait_locked(
        self, operation: str, instances: int, reserve: int
    ) -> tuple[float, list[tuple[TokenBucket, float]]]:
        now = self._clock()
        wanted = [(self._buckets[cls := action_class(operation)], 1.0)]
        if cls == "run_instances" and instances:
            wanted.append((self._buckets[LAUNCH_INSTANCES], float(instances)))
        for bucket, _ in wanted:
            bucket.refill(now)
        first = wanted[0][0].wait(1.0, reserve)
        return max([first, *(b.wait(n) for b, n in wanted[1:])]), wanted

    def take(self, operation: str, *, instances: int = 0, reserve: int = 0) -> float:
        """Take the tokens of one call and return 0, or take nothing and return the
        seconds until they will be there. ``reserve`` request tokens stay untouched
        (kept for the callers ahead in a queue)."""
        with self._lock:
            wait, wanted = self._wait_locked(operation, instances, reserve)
            if wait > 0:
                return wait
            for bucket, n in wanted:
                bucket.level -= n
            return 0.0

    def wait(self, operation: str, *, instances: int = 0, reserve: int = 0) -> float:
        """What :meth:`take` would answer, taking nothing."""
        with self._lock:
            return self._wait_locked(operation, instances, reserve)[0]

    def throttled(self, operation: str) -> float:
        """EC2 throttled a call: its bucket is empty, so is ours from now on. Returns
        the seconds until one token is back (the hint for a retry)."""
        with self._lock:
            bucket = self._buckets[action_class(operation)]
            bucket.refill(self._clock())
            bucket.level = 0.0
            return bucket.wait(1.0)

    def per_second(self, operation: str) -> float:
        return self._buckets[action_class(operation)].spec.per_second

"""Recent DescribeInstances answers, so one pool's join check can use another's call.

Every describe by ids records what EC2 said of each instance, stamped with the time
the call was sent. A join check asks with ``reuse``: when EC2 described every one of
its ids within ``reuse_seconds``, that answer is the check's, with no call (the
joining pools' ids ride along in each other's calls, see ``batch.padded``). An id
EC2 did not list is not recorded, so a gone instance is always asked about again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

from atomic_gang_provisioner.cloud.values import Instance

KEPT = 20_000


class Observations:
    def __init__(self, *, monotonic: Callable[[], float], reuse_seconds: float) -> None:
        self.now = monotonic
        self._reuse = reuse_seconds
        self._seen: OrderedDict[str, tuple[float, Instance]] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, instances: Iterable[Instance], *, at: float) -> None:
        with self._lock:
            for inst in instances:
                self._seen[inst.instance_id] = (at, inst)
                self._seen.move_to_end(inst.instance_id)
            while len(self._seen) > KEPT:
                self._seen.popitem(last=False)

    def recent(self, instance_ids: Sequence[str]) -> tuple[Instance, ...] | None:
        """Every one of these as EC2 described it within the reuse window, or None."""
        if self._reuse <= 0 or not instance_ids:
            return None
        oldest = self.now() - self._reuse
        with self._lock:
            found = [self._seen.get(i) for i in instance_ids]
        if any(f is None or f[0] < oldest for f in found):
            return None
        return tuple(f[1] for f in found if f is not None)

    def unhealthy(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        """Those of these ids whose latest recorded answer, of any age, is not healthy."""
        with self._lock:
            found = [(i, self._seen.get(i)) for i in instance_ids]
        return tuple(i for i, f in found if f is not None and not f[1].healthy)

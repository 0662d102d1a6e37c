"""DescribeInstanceTopology for a gang, behind a limiter, cached per instance.

Its API budget is tiny (reported as 1 request/s, burst 1), so: one call per gang
with all its ids (up to 100 a call), a client-side token bucket that answers
"not now, in t seconds" instead of calling (a reconcile never sleeps for it), and
a cache, since a running instance's place in the network does not change.
Instances EC2 does not list (unsupported type, not running yet) are not cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from atomic_gang_provisioner.cloud.aws.batch import chunks
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.errors import CloudError
from atomic_gang_provisioner.cloud.types import TopologyRead

IDS_PER_CALL = 100
CACHE_MAX = 20_000
THROTTLED_WAIT = 5.0


class TokenBucket:
    def __init__(self, *, rate: float, burst: float, monotonic: Callable[[], float]) -> None:
        self._rate, self._burst, self._now = rate, burst, monotonic
        self._level, self._stamp = burst, monotonic()
        self._lock = threading.Lock()

    def take(self) -> float:
        """0.0 when a token was taken; else the seconds until one is there."""
        with self._lock:
            now = self._now()
            self._level = min(self._burst, self._level + (now - self._stamp) * self._rate)
            self._stamp = now
            if self._level >= 1.0:
                self._level -= 1.0
                return 0.0
            return (1.0 - self._level) / self._rate


class TopologyReader:
    def __init__(
        self,
        *,
        clients: AwsClients,
        caller: Caller,
        monotonic: Callable[[], float],
        rate: float = 1.0,
        burst: float = 1.0,
    ) -> None:
        self._ec2 = clients.ec2
        self._caller = caller
        self._bucket = TokenBucket(rate=rate, burst=burst, monotonic=monotonic)
        self._cache: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, instance_ids: Sequence[str]) -> TopologyRead:
        wanted = sorted(set(instance_ids))
        with self._lock:
            missing = [i for i in wanted if i not in self._cache]
        for chunk in chunks(missing, IDS_PER_CALL):
            wait = self._bucket.take()
            if wait:
                return TopologyRead(nodes=self._known(wanted), retry_after=wait)
            try:
                rows = list(
                    self._caller.pages(
                        self._ec2, "describe_instance_topology", "Instances", InstanceIds=chunk
                    )
                )
            except CloudError as err:
                if err.kind != "throttled":  # still throttled after the caller's retries
                    raise
                return TopologyRead(nodes=self._known(wanted), retry_after=THROTTLED_WAIT)
            self._remember(rows)
        return TopologyRead(nodes=self._known(wanted))

    def _remember(self, rows: Iterable[dict[str, Any]]) -> None:
        found = [
            (str(r["InstanceId"]), tuple(str(n) for n in r.get("NetworkNodes") or ())) for r in rows
        ]
        with self._lock:
            for iid, nodes in found:
                if nodes:
                    self._cache[iid] = nodes
            while len(self._cache) > CACHE_MAX:
                self._cache.popitem(last=False)

    def _known(self, wanted: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        with self._lock:
            return tuple((i, self._cache[i]) for i in wanted if i in self._cache)

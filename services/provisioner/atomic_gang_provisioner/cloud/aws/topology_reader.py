"""DescribeInstanceTopology for gangs, batched, behind a limiter, cached per instance.

Its API budget is tiny (reported as 1 request/s, burst 1), so: the gangs that ask
share calls (up to 100 ids a call, gangs in the order they asked, so 12 gangs of 8
cost one call, not twelve seconds). A client-side token bucket a tenth slower than
EC2's, its refill counted from each answer (EC2 may take a call late; spacing our
sends would not space its arrivals), paces the calls so EC2 never throttles us:
short of a token, the batch thread (never a reconcile, which holds a Future) waits
for the next one while more gangs join the next call; should none come, the gangs
get "later, in t seconds". A cache, since a running instance's place in the network
does not change: a gang whose ids are all cached gets its answer at once, without a
batch. Instances EC2 does not list (unsupported type, not running yet) are not
cached. A gang may name other gangs' ids (``also``): they fill the room left in the
last call of a batch (never a call of their own), so those gangs find their
answers cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from typing import Any

from atomic_gang_provisioner.cloud.aws.batch import chunks, padded
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.batcher import Batcher, Windows
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.values import TopologyRead

IDS_PER_CALL = 100
PACE = 0.9  # of EC2's rate
Ids = tuple[str, ...]
Ask = tuple[Ids, Ids]  # (the gang's ids, other gangs' ids to ask along)
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
            if self._level >= 1.0 - 1e-9:  # a refill short by a rounding error is whole
                self._level = max(0.0, self._level - 1.0)
                return 0.0
            return (1.0 - self._level) / self._rate

    def spent(self) -> None:
        """A call just came back: count the next refill from now. EC2 may have taken
        the call late (its queue), so pacing from our send would not space its
        arrivals; pacing from its answer does."""
        with self._lock:
            self._level, self._stamp = 0.0, self._now()


class TopologyReader:
    def __init__(
        self,
        *,
        clients: AwsClients,
        caller: Caller,
        monotonic: Callable[[], float],
        rate: float = 1.0,
        burst: float = 1.0,
        windows: Windows | None = None,
    ) -> None:
        self._ec2 = clients.ec2
        self._caller = caller
        self._bucket = TokenBucket(rate=rate * PACE, burst=burst, monotonic=monotonic)
        self._cache: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._batch: Batcher[Ask, TopologyRead] = Batcher(
            name="describe-instance-topology",
            run=self._read,
            windows=windows or Windows(),
            in_flight=1,  # paced: one call after another
        )

    def read_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = ()
    ) -> Future[TopologyRead]:
        wanted = tuple(sorted(set(instance_ids)))
        with self._lock:
            cached = all(i in self._cache for i in wanted)
        if not cached:
            return self._batch.submit((wanted, tuple(also)))
        done: Future[TopologyRead] = Future()
        done.set_result(TopologyRead(nodes=self._known(list(wanted))))
        return done

    def _read(self, requests: Sequence[Ask]) -> list[TopologyRead | Exception]:
        """One batch: its gangs' uncached ids in calls of up to 100, in the order the
        gangs asked; once the bucket is empty the rest wait, with the time to wait."""
        own = {i for ids, _ in requests for i in ids}
        unread: set[str] = set()
        failed: dict[str, Exception] = {}
        wait = 0.0
        work = self._chunks(requests)
        while work:
            chunk = work.pop(0)
            wait = wait or self._token()
            if wait:
                unread.update(chunk)
                continue
            try:
                self._remember(
                    self._caller.pages(
                        self._ec2, "describe_instance_topology", "Instances", InstanceIds=chunk
                    )
                )
                self._bucket.spent()
            except CloudError as err:
                self._bucket.spent()
                mine = [i for i in chunk if i in own]
                if err.kind == "throttled":  # still throttled after the caller's retries
                    wait = THROTTLED_WAIT
                    unread.update(chunk)
                elif len(mine) < len(chunk):  # an id asked along may be the bad one
                    work.insert(0, mine)
                else:
                    failed.update((i, err) for i in chunk)
        return [self._answer(ids, unread, failed, wait) for ids, _ in requests]

    def _token(self) -> float:
        """0.0 with a token taken; else, after one wait for the refill, the seconds
        still to wait (a clock that did not move: tests)."""
        wait = self._bucket.take()
        if wait:
            self._caller.sleeper(wait)
            wait = self._bucket.take()
        return wait

    def _chunks(self, requests: Sequence[Ask]) -> list[list[str]]:
        with self._lock:
            seen = set(self._cache)
        order: list[str] = []
        for ids, _ in requests:
            order.extend(i for i in ids if i not in seen)
            seen.update(ids)
        extra = (i for _, also in requests for i in also if i not in seen)
        return chunks(padded(order, extra, IDS_PER_CALL), IDS_PER_CALL)

    def _answer(
        self, ids: Ids, unread: set[str], failed: dict[str, Exception], wait: float
    ) -> TopologyRead | Exception:
        err = next((failed[i] for i in ids if i in failed), None)
        if err is not None:
            return err
        later = wait if unread.intersection(ids) else 0.0
        return TopologyRead(nodes=self._known(list(ids)), retry_after=later)

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

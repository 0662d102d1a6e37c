"""A deduplicating, delaying, rate-limited work queue with client-go semantics.

A key is in at most one of: queued, being processed, or both "processing and
dirty" (re-added while a worker holds it; handed out again only after
``done``). So no two workers ever hold the same key, and a burst of adds for a
key costs one reconcile. Ready keys go out by priority, then first come first
served (controller-runtime's priority queue): an add with a higher priority
raises a key that is already queued. Delayed keys sit in a heap ordered by due
time on the injected clock. Unlike client-go, ``shutdown`` does not drain: a
controller that lost its leadership must stop handing out work at once.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from atomic_gang_provisioner.runtime.ratelimit import ExponentialBackoff

K = TypeVar("K", bound=Hashable)
Clock = Callable[[], float]  # seconds; time.monotonic unless a test steps one


class WorkQueue(Generic[K]):
    """Distinct keys by priority, then FIFO, with ``add_after`` and per-key backoff."""

    def __init__(
        self, *, clock: Clock = time.monotonic, rate_limiter: ExponentialBackoff | None = None
    ) -> None:
        self._clock = clock
        self._limiter = rate_limiter or ExponentialBackoff()
        self._cond = threading.Condition()
        # Ready keys: (-priority, sequence, key) in a heap, an entry live only while it is
        # the key's entry in _queued (a raised key leaves its old entry behind).
        self._queue: list[tuple[int, int, K]] = []
        self._queued: dict[K, tuple[int, int]] = {}
        self._dirty: dict[K, int] = {}  # queued, or re-added while processing -> priority
        self._processing: set[K] = set()
        # key -> (earliest due time, heap sequence): the sequence tells the live heap
        # entry from a stale one that happens to share its due time.
        self._waiting: dict[K, tuple[float, int]] = {}
        self._heap: list[tuple[float, int, K]] = []  # stale entries skipped lazily
        self._seq = itertools.count()
        self._shutdown = False
        self._ready_since: dict[K, float] = {}  # queued key -> when it became ready
        self._waited: dict[K, float] = {}  # handed-out key -> how long it was ready
        self._choosy_sleepers = 0  # getters with a min_priority, asleep in get()

    def add(self, key: K, *, priority: int = 0) -> None:
        """Queue ``key`` unless it is already queued (then a higher ``priority`` moves it
        up); defer it if it is being processed."""
        with self._cond:
            self._add_locked(key, priority)

    def _add_locked(self, key: K, priority: int, *, ready_at: float | None = None) -> None:
        if self._shutdown:
            return
        known = self._dirty.get(key)
        if known is not None and known >= priority:
            return
        self._dirty[key] = priority
        if key in self._processing:
            return  # handed out again by done()
        self._append_locked(key, priority, ready_at)

    def _append_locked(self, key: K, priority: int, ready_at: float | None = None) -> None:
        entry = (priority, next(self._seq))
        self._queued[key] = entry
        heapq.heappush(self._queue, (-priority, entry[1], key))
        if key not in self._ready_since:  # a raised key waits from its first add
            self._ready_since[key] = self._clock() if ready_at is None else ready_at
        self._wake_locked()

    def _wake_locked(self) -> None:
        # A getter that takes only high priorities would swallow a lone notify meant for
        # a key it leaves alone: while one sleeps, wake every getter.
        if self._choosy_sleepers:
            self._cond.notify_all()
        else:
            self._cond.notify()

    def add_after(self, key: K, seconds: float) -> None:
        """Queue ``key`` once ``seconds`` have passed; an earlier pending time wins."""
        if seconds <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutdown:
                return
            due = self._clock() + seconds
            if self._waiting.get(key, (float("inf"), 0))[0] <= due:
                return
            entry = (due, next(self._seq))
            self._waiting[key] = entry
            heapq.heappush(self._heap, (*entry, key))
            self._wake_locked()  # a sleeping worker may need to wake earlier

    def add_rate_limited(self, key: K) -> None:
        """Queue ``key`` after its next backoff delay (one more failure counted)."""
        self.add_after(key, self._limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff (after a successful reconcile)."""
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self._limiter.num_requeues(key)

    def get(self, timeout: float | None = None, *, min_priority: int | None = None) -> K | None:
        """Block until a key is ready (with ``min_priority``, one queued at least that
        high) and hand it out; None on timeout or shutdown."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._shutdown:
                    return None
                self._promote_due_locked()
                key = self._pop_ready_locked(min_priority)
                if key is not None:
                    self._processing.add(key)
                    since = self._ready_since.pop(key, None)
                    self._waited[key] = 0.0 if since is None else self._clock() - since
                    return key
                wait = self._wait_seconds_locked(deadline)
                if wait is not None and wait <= 0:
                    return None
                self._sleep_locked(wait, choosy=min_priority is not None)

    def _sleep_locked(self, seconds: float | None, *, choosy: bool) -> None:
        self._choosy_sleepers += choosy
        try:
            self._cond.wait(seconds)
        finally:
            self._choosy_sleepers -= choosy

    def _pop_ready_locked(self, min_priority: int | None) -> K | None:
        while self._queue:
            neg_priority, seq, key = self._queue[0]
            if self._queued.get(key) != (-neg_priority, seq):
                heapq.heappop(self._queue)  # the stale entry of a raised key
                continue
            if min_priority is not None and -neg_priority < min_priority:
                return None
            heapq.heappop(self._queue)
            del self._queued[key]
            del self._dirty[key]
            return key
        return None

    def _wait_seconds_locked(self, deadline: float | None) -> float | None:
        wait = None if deadline is None else deadline - time.monotonic()
        if self._heap:
            # A fake clock's seconds are waited in real time only until it wakes us.
            due_in = max(self._heap[0][0] - self._clock(), 0.0005)
            wait = due_in if wait is None else min(wait, due_in)
        return wait

    def _promote_due_locked(self) -> None:
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            due, seq, key = heapq.heappop(self._heap)
            if self._waiting.get(key) == (due, seq):
                del self._waiting[key]
                self._add_locked(key, 0, ready_at=due)  # ready since it fell due

    def done(self, key: K) -> None:
        """Mark ``key`` processed; if it was re-added meanwhile, queue it again now."""
        with self._cond:
            self._processing.discard(key)
            self._waited.pop(key, None)
            if key in self._dirty and not self._shutdown:
                self._append_locked(key, self._dirty[key])

    def waited(self, key: K) -> float:
        """How long ``key``, now in a worker's hands, sat ready before it was handed out
        (on the queue's clock: client-go's workqueue_queue_duration_seconds)."""
        with self._cond:
            return self._waited.get(key, 0.0)

    def wake(self) -> None:
        """Re-check delayed keys now (a clock that tests step calls this when it moves)."""
        with self._cond:
            self._cond.notify_all()

    def shutdown(self) -> None:
        """Stop handing out keys; every blocked and future ``get`` returns None."""
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutdown

    def __len__(self) -> int:
        """Keys ready to be handed out (client-go's Len); see also :meth:`waiting`."""
        with self._cond:
            return len(self._queued)

    def waiting(self) -> int:
        """Keys held back by ``add_after`` / backoff."""
        with self._cond:
            return len(self._waiting)

    def processing(self) -> int:
        with self._cond:
            return len(self._processing)

    def idle(self) -> bool:
        """Nothing queued, nothing in a worker's hands (delayed keys may remain)."""
        with self._cond:
            return not self._queued and not self._processing

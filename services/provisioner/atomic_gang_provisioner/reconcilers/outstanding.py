"""One outstanding cloud read per pool, so the joining path never holds a worker on EC2.

The reconcile hands its ids to a batched read (a Future) and ends; the answer requeues
the pool, and the next reconcile takes it. A reconcile woken before the answer (a Node
event) finds the read still out and ends too, instead of asking again. Without a queue
to come back through (tests), the answer is waited for inline; one there at once (a
cache hit) is used at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")
Ids = tuple[str, ...]


class Outstanding(Generic[T]):
    def __init__(self, requeue: Callable[[str], None] | None) -> None:
        self._requeue = requeue
        self._asked: dict[str, tuple[Ids, Future[T]]] = {}
        self._lock = threading.Lock()

    def answer(self, pool: str, ids: Ids, start: Callable[[Ids], Future[T]]) -> T | None:
        """The read's answer for exactly these ids, or None while it is out (its error,
        if any, is raised here: it fails this reconcile, which backs off)."""
        with self._lock:
            asked = self._asked.get(pool)
            if asked is not None and asked[0] == ids and not asked[1].done():
                return None
            self._asked.pop(pool, None)
        if asked is not None and asked[0] == ids:
            return asked[1].result()
        future = start(ids)
        requeue = self._requeue
        if requeue is None or future.done():  # answered at once (all cached): no round trip
            return future.result()
        with self._lock:
            self._asked[pool] = (ids, future)
        future.add_done_callback(lambda _: requeue(pool))
        return None

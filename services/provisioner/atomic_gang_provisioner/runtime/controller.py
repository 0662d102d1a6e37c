"""A worker pool running one reconcile function over a :class:`WorkQueue`.

``max_workers`` threads (``maxConcurrentPoolReconciles``) pull keys, and
``urgent_workers`` more take only keys enqueued with a priority above 0 (such a
key then never waits for a worker busy with ordinary ones); the queue
guarantees a key is never reconciled twice at once. A reconcile returns a
:class:`Result` (or None) or raises: an exception counts a failure and requeues
with backoff, a success forgets the key's backoff and honours
``requeue_after``. ``stop`` is final: after losing leadership, build a new one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from atomic_gang_provisioner.callbacks import call_guarded
from atomic_gang_provisioner.runtime.workqueue import WorkQueue

K = TypeVar("K", bound=Hashable)
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: a timed requeue, or a backoff requeue."""

    requeue_after: float | None = None
    requeue: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerHooks(Generic[K]):
    """Metrics taps; called on the worker thread, exceptions are logged and ignored."""

    on_error: Callable[[K, Exception], None] | None = None
    on_reconciled: Callable[[K, float, bool], None] | None = None  # key, seconds, ok
    on_picked: Callable[[K, float], None] | None = None  # key, seconds it sat ready


class Controller(Generic[K]):
    """Runs ``reconcile(key)`` on up to ``max_workers`` threads."""

    def __init__(
        self,
        *,
        name: str,
        reconcile: Callable[[K], Result | None],
        max_workers: int,
        queue: WorkQueue[K] | None = None,
        hooks: ControllerHooks[K] | None = None,
        urgent_workers: int = 0,
    ) -> None:
        if max_workers < 1 or urgent_workers < 0:
            raise ValueError("max_workers must be >= 1 and urgent_workers >= 0")
        self.name = name
        self.queue: WorkQueue[K] = queue if queue is not None else WorkQueue()
        self._reconcile = reconcile
        self._max_workers = max_workers
        self._urgent_workers = urgent_workers
        self._hooks: ControllerHooks[K] = hooks or ControllerHooks()
        self._threads: list[threading.Thread] = []
        self._started = False

    def enqueue(self, key: K, *, priority: int = 0) -> None:
        self.queue.add(key, priority=priority)

    def depth(self) -> int:
        """Keys ready but not yet picked up (the queue-depth gauge)."""
        return len(self.queue)

    def start(self) -> None:
        if self._started:
            raise RuntimeError(f"controller {self.name} already started")
        self._started = True
        lanes: list[tuple[str, int | None]] = [
            (f"{self.name}-{i}", None) for i in range(self._max_workers)
        ]
        lanes += [(f"{self.name}-urgent-{i}", 1) for i in range(self._urgent_workers)]
        for thread_name, min_priority in lanes:
            t = threading.Thread(
                target=self._worker, args=(min_priority,), name=thread_name, daemon=True
            )
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float | None = 30.0) -> bool:
        """Hand out no more keys and wait for in-flight reconciles; False if some still run."""
        self.queue.shutdown()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        return not any(t.is_alive() for t in self._threads)

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _worker(self, min_priority: int | None) -> None:
        while True:
            key = self.queue.get(min_priority=min_priority)
            if key is None:
                return
            self._call_hook(self._hooks.on_picked, key, self.queue.waited(key))
            try:
                self._process(key)
            finally:
                self.queue.done(key)

    def _process(self, key: K) -> None:
        start = time.monotonic()
        try:
            result = self._reconcile(key)
        except Exception as exc:
            log.exception("reconcile %s %r failed", self.name, key)
            self._call_hook(self._hooks.on_error, key, exc)
            self._call_hook(self._hooks.on_reconciled, key, time.monotonic() - start, False)
            self.queue.add_rate_limited(key)
            return
        self._call_hook(self._hooks.on_reconciled, key, time.monotonic() - start, True)
        if result is not None and result.requeue and result.requeue_after is None:
            self.queue.add_rate_limited(key)
            return
        self.queue.forget(key)
        if result is not None and result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after)

    def _call_hook(self, hook: Callable[..., None] | None, *args: object) -> None:
        call_guarded(hook, *args, log=log, what=f"controller {self.name} hook")

"""Coalescing many callers' requests into one call, as Karpenter's batcher does.

A batch opens with its first request and is sent once no request has arrived for
``idle_seconds``, or ``max_seconds`` after it opened, or at ``max_items`` requests,
whichever comes first. ``run`` answers every request of the batch in order, with a
result or an exception of its own, so each caller gets exactly its own answer and
error (an exception ``run`` raises goes to every caller of that batch). Up to
``in_flight`` batches are out at once (a slow answer does not hold back the next
batch); while all are out, new requests gather into the next one. Callers get a
Future and never wait for each other's calls.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

Req = TypeVar("Req")
Res = TypeVar("Res")
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Windows:
    idle_seconds: float = 0.01
    max_seconds: float = 0.1
    max_items: int = 500

    def __post_init__(self) -> None:
        if not 0 <= self.idle_seconds <= self.max_seconds or self.max_items < 1:
            raise ValueError("need 0 <= idle_seconds <= max_seconds and max_items >= 1")


Run = Callable[[Sequence[Req]], Sequence[Res | Exception]]


class Batcher(Generic[Req, Res]):
    def __init__(
        self,
        *,
        name: str,
        run: Run[Req, Res],
        windows: Windows,
        monotonic: Callable[[], float] = time.monotonic,
        in_flight: int = 4,
    ) -> None:
        self.name = name
        self._run = run
        self._windows = windows
        self._now = monotonic
        self._pending: list[tuple[Req, Future[Res]]] = []
        self._opened = 0.0
        self._last = 0.0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._slots = threading.BoundedSemaphore(in_flight)
        self._senders = ThreadPoolExecutor(in_flight, thread_name_prefix=name)

    def submit(self, request: Req) -> Future[Res]:
        future: Future[Res] = Future()
        with self._cond:
            now = self._now()
            if not self._pending:
                self._opened = now
            self._last = now
            self._pending.append((request, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify()
        return future

    def call(self, request: Req) -> Res:
        """Submit and wait: for callers that need the answer before going on."""
        return self.submit(request).result()

    def _due_in_locked(self) -> float:
        w = self._windows
        if len(self._pending) >= w.max_items:
            return 0.0
        now = self._now()
        return max(0.0, min(self._last + w.idle_seconds, self._opened + w.max_seconds) - now)

    def _take(self) -> list[tuple[Req, Future[Res]]]:
        with self._cond:
            while True:
                if not self._pending:
                    self._cond.wait()
                    continue
                wait = self._due_in_locked()
                if wait <= 0:
                    batch = self._pending[: self._windows.max_items]
                    del self._pending[: len(batch)]
                    self._opened = self._last = self._now()
                    return batch
                self._cond.wait(wait)

    def _loop(self) -> None:
        while True:
            self._slots.acquire()  # a free slot first: meanwhile the next batch gathers
            batch = self._take()
            self._senders.submit(self._answer, batch)

    def _answer(self, batch: list[tuple[Req, Future[Res]]]) -> None:
        try:
            self._answer_all(batch)
        finally:
            self._slots.release()

    def _answer_all(self, batch: list[tuple[Req, Future[Res]]]) -> None:
        try:
            answers = self._run([req for req, _ in batch])
            if len(answers) != len(batch):
                raise RuntimeError(f"{self.name}: {len(answers)} answers for {len(batch)}")
        except Exception as err:  # every caller of the batch hears of it
            log.debug("batch failed", extra={"batcher": self.name, "error": repr(err)})
            answers = [err] * len(batch)
        for (_, future), answer in zip(batch, answers, strict=True):
            if isinstance(answer, Exception):
                future.set_exception(answer)
            else:
                future.set_result(answer)

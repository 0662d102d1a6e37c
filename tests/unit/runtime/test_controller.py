"""Controller: parallel across keys, serial per key, backoff on errors, requeue_after, stop."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from atomic_gang_provisioner.runtime import (
    Controller,
    ControllerHooks,
    ExponentialBackoff,
    Result,
    WorkQueue,
)
from tests.support.clock import ManualClock
from tests.support.wait import wait_for

WAIT = 10.0  # generous deadline for events that normally take microseconds


@pytest.fixture
def controllers() -> Iterator[list[Controller[str]]]:
    made: list[Controller[str]] = []
    yield made
    for c in made:
        assert c.stop(timeout=WAIT)


def test_workers_run_different_keys_in_parallel(controllers: list[Controller[str]]) -> None:
    barrier = threading.Barrier(3, timeout=WAIT)
    seen: list[str] = []

    def reconcile(key: str) -> None:
        barrier.wait()  # passes only when three reconciles run at the same time
        seen.append(key)

    c = Controller(name="par", reconcile=reconcile, max_workers=3)
    controllers.append(c)
    c.start()
    for k in "abc":
        c.enqueue(k)
    _wait(lambda: sorted(seen) == ["a", "b", "c"])


def test_a_key_is_serialised_and_readds_collapse(controllers: list[Controller[str]]) -> None:
    release = threading.Event()
    in_a = threading.Event()
    b_done = threading.Event()
    calls: list[str] = []
    lock = threading.Lock()

    def reconcile(key: str) -> None:
        with lock:
            calls.append(key)
        if key == "a" and len([c for c in calls if c == "a"]) == 1:
            in_a.set()
            assert release.wait(WAIT)
        if key == "b":
            b_done.set()

    c = Controller(name="ser", reconcile=reconcile, max_workers=4)
    controllers.append(c)
    c.start()
    c.enqueue("a")
    assert in_a.wait(WAIT)
    for _ in range(50):
        c.enqueue("a")  # while "a" runs: deferred, collapsed into one
    c.enqueue("b")
    assert b_done.wait(WAIT), "free workers still serve other keys"
    assert calls.count("a") == 1
    release.set()
    _wait(lambda: calls.count("a") == 2 and c.queue.idle())
    assert calls.count("a") == 2


def test_errors_back_off_and_success_forgets(controllers: list[Controller[str]]) -> None:
    clock = ManualClock()
    q: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=ExponentialBackoff(base_seconds=1, cap_seconds=4, jitter=0)
    )
    clock.on_advance(q.wake)
    errors: list[tuple[str, str]] = []
    outcomes: list[bool] = []
    attempts: list[str] = []

    def reconcile(key: str) -> None:
        attempts.append(key)
        if len(attempts) <= 3:
            raise RuntimeError(f"boom {len(attempts)}")

    hooks: ControllerHooks[str] = ControllerHooks(
        on_error=lambda k, e: errors.append((k, str(e))),
        on_reconciled=lambda k, s, ok: outcomes.append(ok),
    )
    c = Controller(name="err", reconcile=reconcile, max_workers=2, queue=q, hooks=hooks)
    controllers.append(c)
    c.start()
    c.enqueue("k")
    for n, delay in enumerate([1, 2, 4], start=1):

        def failed_and_parked(n: int = n) -> bool:
            return len(attempts) == n and q.waiting() == 1

        _wait(failed_and_parked)
        assert q.num_requeues("k") == n
        clock.advance(delay - 0.001)
        assert len(attempts) == n, "not before its backoff"
        clock.advance(0.001)
    _wait(lambda: len(attempts) == 4 and q.idle())
    assert q.num_requeues("k") == 0, "a success forgets the backoff"
    assert errors == [("k", "boom 1"), ("k", "boom 2"), ("k", "boom 3")]
    assert outcomes == [False, False, False, True]


def test_requeue_after_and_requeue(controllers: list[Controller[str]]) -> None:
    clock = ManualClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    clock.on_advance(q.wake)
    runs: list[str] = []

    def reconcile(key: str) -> Result:
        runs.append(key)
        return Result(requeue_after=60) if key == "timed" else Result(requeue=True)

    c = Controller(name="rq", reconcile=reconcile, max_workers=1, queue=q)
    controllers.append(c)
    c.start()
    c.enqueue("timed")
    _wait(lambda: runs == ["timed"] and q.waiting() == 1)
    clock.advance(60)
    _wait(lambda: runs == ["timed", "timed"])
    c.enqueue("rl")
    _wait(lambda: q.num_requeues("rl") == 1 and q.waiting() == 2)
    assert runs.count("rl") == 1, "requeue=True backs off like an error"


def test_a_failing_hook_does_not_kill_the_worker(controllers: list[Controller[str]]) -> None:
    runs: list[str] = []

    def bad_hook(key: str, seconds: float, ok: bool) -> None:
        raise ValueError("metrics broke")

    c = Controller(
        name="hook",
        reconcile=runs.append,
        max_workers=1,
        hooks=ControllerHooks(on_reconciled=bad_hook),
    )
    controllers.append(c)
    c.start()
    c.enqueue("a")
    c.enqueue("b")
    _wait(lambda: runs == ["a", "b"])


def test_stop_is_prompt_and_final() -> None:
    c: Controller[str] = Controller(name="stop", reconcile=lambda k: None, max_workers=3)
    c.start()
    with pytest.raises(RuntimeError):
        c.start()
    assert c.stop(timeout=WAIT)
    assert not c.running
    c.enqueue("a")
    assert c.depth() == 0


def test_stop_waits_for_the_reconcile_in_flight() -> None:
    entered, release = threading.Event(), threading.Event()

    def reconcile(key: str) -> None:
        entered.set()
        release.wait(WAIT)

    c: Controller[str] = Controller(name="inflight", reconcile=reconcile, max_workers=1)
    c.start()
    c.enqueue("a")
    assert entered.wait(WAIT)
    assert not c.stop(timeout=0.05), "still running its reconcile"
    release.set()
    assert c.stop(timeout=WAIT)


def test_rejects_zero_workers() -> None:
    with pytest.raises(ValueError, match="max_workers"):
        Controller(name="x", reconcile=lambda k: None, max_workers=0)
    with pytest.raises(ValueError, match="urgent_workers"):
        Controller(name="x", reconcile=lambda k: None, max_workers=1, urgent_workers=-1)


def test_an_urgent_key_does_not_wait_for_the_busy_ordinary_workers(
    controllers: list[Controller[str]],
) -> None:
    release = threading.Event()
    seen: list[str] = []

    def reconcile(key: str) -> None:
        seen.append(key)
        if key == "slow":
            assert release.wait(WAIT)

    c = Controller(name="lanes", reconcile=reconcile, max_workers=1, urgent_workers=1)
    controllers.append(c)
    c.start()
    c.enqueue("slow")
    _wait(lambda: seen == ["slow"])
    c.enqueue("ordinary")
    c.enqueue("urgent", priority=1)
    _wait(lambda: seen == ["slow", "urgent"])  # while "slow" still holds the only worker
    assert c.depth() == 1, "the urgent worker leaves the ordinary key to the others"
    release.set()
    _wait(lambda: seen == ["slow", "urgent", "ordinary"])


def _wait(cond: Callable[[], bool]) -> None:
    wait_for(cond, timeout=WAIT, interval=0.001)

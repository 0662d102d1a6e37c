"""WorkQueue: dedup, deferral while processing, delayed adds on a fake clock, shutdown."""

from __future__ import annotations

import threading

import pytest

from atomic_gang_provisioner.runtime import ExponentialBackoff, WorkQueue
from tests.support.clock import ManualClock
from tests.support.wait import wait_for


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def q(clock: ManualClock) -> WorkQueue[str]:
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    clock.on_advance(queue.wake)
    return queue


def drain(q: WorkQueue[str]) -> list[str]:
    out = []
    while (k := q.get(timeout=0)) is not None:
        out.append(k)
        q.done(k)
    return out


class TestDedup:
    def test_adds_of_a_queued_key_collapse(self, q: WorkQueue[str]) -> None:
        for k in ("a", "b", "a", "a", "c", "b"):
            q.add(k)
        assert len(q) == 3
        assert drain(q) == ["a", "b", "c"]

    def test_readd_while_processing_is_deferred_until_done(self, q: WorkQueue[str]) -> None:
        q.add("a")
        assert q.get(timeout=0) == "a"
        q.add("a")
        q.add("a")
        assert len(q) == 0
        assert q.get(timeout=0) is None, "a key in a worker's hands is never handed out twice"
        q.done("a")
        assert q.get(timeout=0) == "a"
        q.done("a")
        assert q.get(timeout=0) is None

    def test_done_without_readd_does_not_requeue(self, q: WorkQueue[str]) -> None:
        q.add("a")
        k = q.get(timeout=0)
        assert k == "a"
        q.done(k)
        assert q.idle()
        assert q.get(timeout=0) is None

    def test_no_two_threads_hold_the_same_key(self) -> None:
        q: WorkQueue[int] = WorkQueue()
        held: set[int] = set()
        lock = threading.Lock()
        clashes: list[int] = []
        handled = [0]

        def worker() -> None:
            while (k := q.get(timeout=0.5)) is not None:
                with lock:
                    if k in held:
                        clashes.append(k)
                    held.add(k)
                q.add(k % 3)  # hammer re-adds of the keys in flight
                with lock:
                    held.discard(k)
                    handled[0] += 1
                q.done(k)
                if handled[0] > 3000:
                    q.shutdown()

        for k in range(3):
            q.add(k)
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not clashes
        assert handled[0] > 3000


class TestDelayed:
    def test_add_after_orders_by_due_time(self, q: WorkQueue[str], clock: ManualClock) -> None:
        q.add_after("late", 30)
        q.add_after("early", 10)
        q.add_after("mid", 20)
        assert q.waiting() == 3
        assert q.get(timeout=0) is None
        clock.advance(25)
        assert drain(q) == ["early", "mid"]
        clock.advance(5)
        assert drain(q) == ["late"]
        assert q.waiting() == 0

    def test_earlier_due_time_wins(self, q: WorkQueue[str], clock: ManualClock) -> None:
        q.add_after("a", 10)
        q.add_after("a", 50)  # later: ignored
        q.add_after("a", 5)  # earlier: replaces
        assert q.waiting() == 1
        clock.advance(5)
        assert drain(q) == ["a"]
        clock.advance(100)
        assert drain(q) == [], "the superseded entries never fire"

    def test_non_positive_delay_is_an_add(self, q: WorkQueue[str]) -> None:
        q.add_after("a", 0)
        q.add_after("b", -1)
        assert drain(q) == ["a", "b"]

    def test_delayed_key_of_a_queued_key_dedups(
        self, q: WorkQueue[str], clock: ManualClock
    ) -> None:
        q.add("a")
        q.add_after("a", 1)
        clock.advance(1)
        assert drain(q) == ["a"]

    def test_blocked_get_wakes_when_the_fake_clock_moves(
        self, q: WorkQueue[str], clock: ManualClock
    ) -> None:
        got: list[str | None] = []
        q.add_after("a", 3600)  # an hour on the fake clock, no real waiting
        t = threading.Thread(target=lambda: got.append(q.get(timeout=10)))
        t.start()
        clock.advance(3600)
        t.join(timeout=10)
        assert got == ["a"]

    def test_get_times_out(self, q: WorkQueue[str]) -> None:
        assert q.get(timeout=0.01) is None


class TestRateLimited:
    def test_backoff_is_counted_per_key_and_forgotten(self, clock: ManualClock) -> None:
        limiter = ExponentialBackoff(base_seconds=1, cap_seconds=8, jitter=0)
        q: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=limiter)
        for _ in range(3):
            q.add_rate_limited("a")
        assert q.num_requeues("a") == 3
        assert q.num_requeues("b") == 0
        clock.advance(1)  # the first delay (1s) won; later ones were superseded
        assert drain(q) == ["a"]
        q.forget("a")
        assert q.num_requeues("a") == 0


class TestShutdown:
    def test_shutdown_unblocks_every_waiter(self, q: WorkQueue[str]) -> None:
        results: list[str | None] = []
        threads = [threading.Thread(target=lambda: results.append(q.get())) for _ in range(3)]
        for t in threads:
            t.start()
        q.shutdown()
        for t in threads:
            t.join(timeout=5)
        assert results == [None, None, None]

    def test_shutdown_stops_handing_out_and_accepting(self, q: WorkQueue[str]) -> None:
        q.add("a")
        q.shutdown()
        assert q.shutting_down
        assert q.get(timeout=0) is None
        q.add("b")
        q.add_after("c", 1)
        assert q.waiting() == 0


def test_a_stale_delay_sharing_the_new_due_time_does_not_jump_the_line() -> None:
    # c's first delay (due 1.0) goes stale when an earlier one wins; c is handed out,
    # then delayed again to the same 1.0. a, delayed to 1.0 before that, goes first.
    clock = ManualClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("c", 1.0)
    q.add_after("c", 0.5)
    q.add_after("a", 1.0)
    clock.advance(0.5)
    assert q.get(timeout=0) == "c"
    q.add_after("c", 0.5)
    clock.advance(0.5)
    q.done("c")
    assert [q.get(timeout=0), q.get(timeout=0)] == ["a", "c"]


class TestQueueWait:
    def test_the_wait_counts_from_ready_not_from_the_first_add(
        self, q: WorkQueue[str], clock: ManualClock
    ) -> None:
        q.add_after("a", 5)
        clock.advance(5)  # due now: ready from here
        clock.advance(2)
        assert q.get(timeout=0) == "a"
        assert q.waited("a") == pytest.approx(2)
        q.done("a")
        assert q.waited("a") == 0.0  # out of a worker's hands

    def test_a_key_readded_while_processing_waits_from_its_done(
        self, q: WorkQueue[str], clock: ManualClock
    ) -> None:
        q.add("a")
        assert q.get(timeout=0) == "a"
        q.add("a")
        clock.advance(3)  # still in the worker's hands: not ready yet
        q.done("a")
        clock.advance(1)
        assert q.get(timeout=0) == "a"
        assert q.waited("a") == pytest.approx(1)


class TestPriority:
    def test_a_higher_priority_goes_first_and_each_priority_in_order(
        self, q: WorkQueue[str]
    ) -> None:
        for key, priority in (("a", 0), ("b", 1), ("c", 0), ("d", 1)):
            q.add(key, priority=priority)
        assert drain(q) == ["b", "d", "a", "c"]

    def test_a_queued_key_moves_up_but_never_down(
        self, q: WorkQueue[str], clock: ManualClock
    ) -> None:
        for key, priority in (("a", 0), ("b", 1), ("c", 0), ("c", 1), ("b", 0)):
            q.add(key, priority=priority)
            clock.advance(1)
        assert len(q) == 3
        assert q.get(timeout=0) == "b"
        assert q.get(timeout=0) == "c"  # raised after b: behind it
        assert q.waited("c") == pytest.approx(3)  # waiting since its first add
        assert q.get(timeout=0) == "a"

    def test_a_key_raised_while_processing_goes_first_after_done(self, q: WorkQueue[str]) -> None:
        q.add("a")
        assert q.get(timeout=0) == "a"
        q.add("b")
        q.add("a", priority=1)
        q.done("a")
        assert drain(q) == ["a", "b"]

    def test_a_delayed_key_falls_due_at_the_lowest_priority(
        self, q: WorkQueue[str], clock: ManualClock
    ) -> None:
        q.add_after("a", 1)
        clock.advance(1)
        q.add("b", priority=1)
        assert drain(q) == ["b", "a"]

    def test_a_getter_with_a_min_priority_takes_only_keys_that_high(
        self, q: WorkQueue[str]
    ) -> None:
        q.add("a")
        assert q.get(timeout=0, min_priority=1) is None
        q.add("b", priority=1)
        assert q.get(timeout=0, min_priority=1) == "b"
        assert q.get(timeout=0) == "a"

    def test_a_choosy_getter_asleep_does_not_swallow_an_ordinary_keys_wakeup(
        self, q: WorkQueue[str]
    ) -> None:
        got: dict[str, str | None] = {}

        def getter(name: str, min_priority: int | None) -> None:
            got[name] = q.get(timeout=10, min_priority=min_priority)

        def asleep() -> int:  # threads blocked in the queue's wait (CPython's Condition)
            return len(q._cond._waiters)  # type: ignore[attr-defined]

        choosy = threading.Thread(target=getter, args=("choosy", 1))
        choosy.start()
        wait_for(lambda: asleep() == 1, timeout=10, interval=0.001)
        ordinary = threading.Thread(target=getter, args=("ordinary", None))
        ordinary.start()  # asleep behind the choosy one: a notify goes to the first
        wait_for(lambda: asleep() == 2, timeout=10, interval=0.001)
        q.add("a")  # a lone notify could wake only the choosy getter, which leaves "a"
        ordinary.join(10)
        assert got == {"ordinary": "a"}
        q.add("b", priority=1)
        choosy.join(10)
        assert got == {"ordinary": "a", "choosy": "b"}

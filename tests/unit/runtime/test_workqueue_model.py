"""Hypothesis state machine: the WorkQueue (priorities included) behaves exactly like a tiny
reference model."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from atomic_gang_provisioner.runtime import WorkQueue
from tests.support.clock import ManualClock

# Coverage's tracer (CPython 3.11 has no sys.monitoring) makes a Hypothesis run about
# three times slower, and the example tests cover the same lines (all but ~11 of 5,300).
pytestmark = pytest.mark.no_cover

KEYS = st.sampled_from(["a", "b", "c", "d"])
DELAYS = st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0])
PRIORITIES = st.sampled_from([0, 0, 1, 2])


class QueueModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.q: WorkQueue[str] = WorkQueue(clock=self.clock)
        self.ready: list[str] = []  # in line order; the highest priority goes first
        self.dirty: dict[str, int] = {}  # key -> the priority it is (or will be) queued at
        self.processing: set[str] = set()
        self.waiting: dict[str, tuple[float, int]] = {}
        self.seq = 0

    def _add(self, key: str, priority: int = 0) -> None:
        if self.dirty.get(key, -1) >= priority:
            return
        self.dirty[key] = priority
        if key not in self.processing:
            if key in self.ready:
                self.ready.remove(key)  # raised: the back of its new line
            self.ready.append(key)

    @rule(key=KEYS, priority=PRIORITIES)
    def add(self, key: str, priority: int) -> None:
        self.q.add(key, priority=priority)
        self._add(key, priority)

    @rule(key=KEYS, delay=DELAYS)
    def add_after(self, key: str, delay: float) -> None:
        self.q.add_after(key, delay)
        if delay <= 0:
            self._add(key)
            return
        due = self.clock() + delay
        if key not in self.waiting or self.waiting[key][0] > due:
            self.waiting[key] = (due, self.seq)
            self.seq += 1

    @rule(seconds=DELAYS)
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule()
    def get(self) -> None:
        now = self.clock()
        for key, _ in sorted(
            ((k, v) for k, v in self.waiting.items() if v[0] <= now), key=lambda kv: kv[1]
        ):
            del self.waiting[key]
            self._add(key)
        expected = None
        if self.ready:
            top = max(self.dirty[k] for k in self.ready)
            expected = next(k for k in self.ready if self.dirty[k] == top)
            self.ready.remove(expected)
            del self.dirty[expected]
            self.processing.add(expected)
        assert self.q.get(timeout=0) == expected

    @precondition(lambda self: bool(self.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.processing)))
        self.q.done(key)
        self.processing.discard(key)
        if key in self.dirty:
            self.ready.append(key)

    @invariant()
    def sizes_match(self) -> None:
        assert len(self.q) == len(self.ready)
        assert self.q.waiting() == len(self.waiting)
        assert self.q.processing() == len(self.processing)


QueueModel.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
TestQueueModel = QueueModel.TestCase

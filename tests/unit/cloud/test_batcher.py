"""The batcher: one call for requests close together, each caller its own answer."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from atomic_gang_provisioner.cloud.batcher import Batcher, Windows
from tests.support.wait import wait_for

DEADLINE = 10.0


class Recorder:
    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = threading.Event()

    def run(self, requests: Sequence[int]) -> list[int | Exception]:
        self.gate.wait(DEADLINE)
        self.batches.append(list(requests))
        return [ValueError(f"bad {r}") if r < 0 else r * 10 for r in requests]


def test_requests_within_the_window_share_one_call_and_get_their_own_answers() -> None:
    rec = Recorder()
    batcher: Batcher[int, int] = Batcher(
        name="t", run=rec.run, windows=Windows(idle_seconds=0.05, max_seconds=5)
    )
    futures = [batcher.submit(n) for n in (1, 2, -3)]
    rec.gate.set()
    assert futures[0].result(DEADLINE) == 10
    assert futures[1].result(DEADLINE) == 20
    with pytest.raises(ValueError, match="bad -3"):
        futures[2].result(DEADLINE)
    assert rec.batches == [[1, 2, -3]]


def test_max_items_closes_a_batch_at_once() -> None:
    rec = Recorder()
    rec.gate.set()
    batcher: Batcher[int, int] = Batcher(
        name="t", run=rec.run, windows=Windows(idle_seconds=5, max_seconds=5, max_items=2)
    )
    futures = [batcher.submit(n) for n in (1, 2)]
    assert [f.result(DEADLINE) for f in futures] == [10, 20]  # long before the 5 s windows
    assert rec.batches == [[1, 2]]


def test_a_failing_run_fails_every_caller_of_its_batch_only() -> None:
    calls: list[Sequence[int]] = []

    def run(requests: Sequence[int]) -> list[int | Exception]:
        calls.append(requests)
        if len(calls) == 1:
            raise RuntimeError("EC2 down")
        return list(requests)

    batcher: Batcher[int, int] = Batcher(name="t", run=run, windows=Windows(idle_seconds=0.0))
    with pytest.raises(RuntimeError, match="EC2 down"):
        batcher.call(1)
    assert batcher.call(2) == 2


def test_windows_are_checked() -> None:
    with pytest.raises(ValueError, match="idle_seconds"):
        Windows(idle_seconds=2, max_seconds=1)


def test_a_slow_answer_does_not_hold_back_the_next_batch() -> None:
    """EC2 slow on one call: the next batch goes out beside it; with every slot taken,
    new requests gather into one batch."""
    slow = threading.Event()
    batches: list[list[int]] = []

    def run(requests: Sequence[int]) -> list[int | Exception]:
        batches.append(list(requests))
        if requests[0] == 1:
            slow.wait(DEADLINE)  # the first call hangs until the test lets it go
        return list(requests)

    windows = Windows(idle_seconds=0.01, max_seconds=0.05)
    two: Batcher[int, int] = Batcher(name="t", run=run, windows=windows, in_flight=2)
    first = two.submit(1)
    wait_for(lambda: batches == [[1]], timeout=DEADLINE, what="the first batch out")
    assert two.submit(2).result(DEADLINE) == 2  # went out while the first hangs
    slow.set()
    assert first.result(DEADLINE) == 1

    batches.clear()
    slow.clear()
    one: Batcher[int, int] = Batcher(name="u", run=run, windows=windows, in_flight=1)
    held = one.submit(1)
    wait_for(lambda: batches == [[1]], timeout=DEADLINE, what="the first batch out")
    later = [one.submit(n) for n in (3, 4)]
    slow.set()
    assert [f.result(DEADLINE) for f in (held, *later)] == [1, 3, 4]
    assert batches == [[1], [3, 4]]  # gathered while the only slot was out

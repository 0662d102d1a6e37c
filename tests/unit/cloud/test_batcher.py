"""The batcher: one call for requests close together, each caller its own answer."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from atomic_gang_provisioner.cloud.batcher import Batcher, Windows

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

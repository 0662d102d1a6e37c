"""One outstanding read per pool: asked once, its answer requeues the pool and is taken
by the next reconcile; an answer there at once is used at once."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from atomic_gang_provisioner.reconcilers.outstanding import Ids, Outstanding
from tests.support.fakecloud import answered


class Reads:
    def __init__(self) -> None:
        self.asked: list[Ids] = []
        self.pending: list[Future[str]] = []

    def later(self, ids: Ids) -> Future[str]:
        self.asked.append(ids)
        future: Future[str] = Future()
        self.pending.append(future)
        return future


def test_asked_once_then_the_answer_requeues_and_is_taken() -> None:
    requeued: list[str] = []
    reads, out = Reads(), Outstanding[str](requeued.append)
    assert out.answer("p", ("i-1",), reads.later) is None
    assert out.answer("p", ("i-1",), reads.later) is None  # still out: not asked again
    assert len(reads.asked) == 1
    reads.pending[0].set_result("nodes")
    assert requeued == ["p"]
    assert out.answer("p", ("i-1",), reads.later) == "nodes"
    assert len(reads.asked) == 1


def test_other_ids_ask_again_and_an_error_fails_the_reconcile() -> None:
    reads, out = Reads(), Outstanding[str](lambda _: None)
    out.answer("p", ("i-1",), reads.later)
    reads.pending[0].set_exception(RuntimeError("EC2 said no"))
    assert out.answer("p", ("i-2",), reads.later) is None  # a new set: a new read
    assert len(reads.asked) == 2
    out.answer("q", ("i-9",), reads.later)
    reads.pending[2].set_exception(RuntimeError("EC2 said no"))
    with pytest.raises(RuntimeError, match="EC2 said no"):
        out.answer("q", ("i-9",), reads.later)


def test_an_answer_there_at_once_needs_no_round_trip() -> None:
    requeued: list[str] = []
    out = Outstanding[str](requeued.append)
    assert out.answer("p", ("i-1",), lambda ids: answered("cached")) == "cached"
    assert requeued == []

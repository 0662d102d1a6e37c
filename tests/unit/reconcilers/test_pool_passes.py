"""How many times a reconcile decides: once, then once after each read it answers, each
read kind at most once a reconcile; a plan that asks a read makes no cloud call
(docs/design.md, "A reconcile decides again after each read, not in two passes")."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from itertools import cycle

import pytest

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.caches import POOL_INDEXERS
from atomic_gang_provisioner.nodes import instance_index
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.model import (
    DeleteGroup,
    Describe,
    FindByTag,
    Observed,
    Plan,
    Read,
    ReadTopology,
)
from atomic_gang_provisioner.reconcilers.pool import READ_ORDER, PoolReconciler
from atomic_gang_provisioner.reconcilers.reads import INSTANCE_INDEX
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import IDS, launched

ASKS: tuple[Read, ...] = (Describe(), ReadTopology(tuple(IDS)), FindByTag(7))


def reconcile_asking(monkeypatch: pytest.MonkeyPatch, asks: tuple[Read, ...]) -> tuple[int, int]:
    """One reconcile whose every decision asks the next read of ``asks`` (round and
    round) and whose every read is answered at once: (decisions, answers)."""
    said = cycle(asks)
    decisions, answers = [0], [0]

    def decide(pool: GangNodePool, observed: Observed, now: datetime) -> Plan:
        decisions[0] += 1
        return Plan(status=pool.status, read=next(said))

    def answer(
        self: PoolReconciler, pool: GangNodePool, read: Read, observed: Observed
    ) -> Observed:
        answers[0] += 1
        return observed

    monkeypatch.setattr(machine, "decide", decide)
    monkeypatch.setattr(PoolReconciler, "_answer", answer)
    transport = RecordingTransport()
    pools = FakeCache([launched().to_dict()], POOL_INDEXERS)
    ctx = context(settings=settings(), transport=transport, pools=pools)
    ctx = replace(ctx, nodes=FakeCache([], {INSTANCE_INDEX: instance_index}))
    PoolReconciler(ctx).reconcile(launched().name)
    assert transport.writes() == []
    return decisions[0], answers[0]


@pytest.mark.parametrize("ask", ASKS, ids=lambda read: type(read).__name__)
def test_a_read_asked_again_after_its_answer_waits_for_the_next_reconcile(
    monkeypatch: pytest.MonkeyPatch, ask: Read
) -> None:
    assert reconcile_asking(monkeypatch, (ask,)) == (2, 1)


def test_a_decision_that_keeps_asking_is_bounded_by_the_read_kinds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert reconcile_asking(monkeypatch, ASKS) == (1 + len(READ_ORDER), len(READ_ORDER))


@pytest.mark.parametrize("read", ASKS, ids=lambda r: type(r).__name__)
def test_a_plan_that_asks_a_read_makes_no_cloud_call(read: Read) -> None:
    with pytest.raises(ValueError, match=f"not both \\(read {type(read).__name__}, call Delete"):
        Plan(status=launched().status, read=read, call=DeleteGroup())

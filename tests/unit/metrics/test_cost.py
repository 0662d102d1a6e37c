"""The cost ledger: instance-seconds per pool and state, from the pool versions we wrote."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from atomic_gang_provisioner.cost import CostLedger, state_of
from tests.support.clock import ManualClock


def pool(name: str, phase: str, held: int, count: int = 4) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {"shape": {"count": count}},
        "status": {"phase": phase, "instanceIds": [f"i-{n}" for n in range(held)]},
    }


@pytest.mark.parametrize(
    ("phase", "held", "want"),
    [
        pytest.param("Idle", 0, None, id="nothing-held-bills-nothing"),
        pytest.param("Acquiring", 4, "launching", id="adopted-set"),
        pytest.param("Joining", 4, "launching", id="joining"),
        pytest.param("Satisfied", 4, "running", id="running"),
        pytest.param("KeepWarm", 4, "keep-warm", id="keep-warm"),
        pytest.param("Releasing", 4, "releasing", id="releasing"),
        pytest.param("Releasing", 2, "releasing", id="releasing-what-is-left"),
        pytest.param("Degraded", 3, "releasing", id="degraded-set-goes"),
        pytest.param("Joining", 3, "stranded", id="partial-set"),
        pytest.param("Satisfied", 2, "stranded", id="partial-running"),
        pytest.param("Idle", 4, "stranded", id="held-by-an-idle-pool"),
    ],
)
def test_state_of(phase: str, held: int, want: str | None) -> None:
    assert state_of(phase=phase, held=held, count=4) == want


def test_each_interval_bills_the_state_of_the_version_it_follows() -> None:
    clock = ManualClock()
    ledger = CostLedger(clock=clock)
    ledger.seen(pool("p", "Acquiring", 0))
    clock.advance(5)
    ledger.seen(pool("p", "Joining", 4))  # launched: 4 instances from now
    clock.advance(10)
    ledger.seen(pool("p", "Satisfied", 4))
    clock.advance(60)
    ledger.seen(pool("p", "Satisfied", 4))  # a resync: same state, nothing lost
    clock.advance(30)
    ledger.seen(pool("p", "Releasing", 4))
    clock.advance(2)
    ledger.seen(pool("p", "Idle", 0))
    clock.advance(100)
    assert ledger.totals() == {
        ("p", "launching"): 40.0,
        ("p", "running"): 360.0,
        ("p", "releasing"): 8.0,
    }


def test_a_scrape_counts_the_open_interval_and_a_deleted_pool_keeps_its_series() -> None:
    clock = ManualClock()
    ledger = CostLedger(clock=clock)
    ledger.seen(pool("p", "KeepWarm", 2, count=2))
    clock.advance(7)
    assert ledger.totals() == {("p", "keep-warm"): 14.0}
    clock.advance(3)
    ledger.gone(pool("p", "KeepWarm", 2, count=2))
    clock.advance(50)
    assert ledger.totals() == {("p", "keep-warm"): 20.0}


def test_only_the_leader_exports() -> None:
    clock = ManualClock()
    leading = False
    ledger = CostLedger(clock=clock, exporting=lambda: leading)
    registry = CollectorRegistry()
    registry.register(ledger)
    ledger.seen(pool("train", "Satisfied", 4))
    clock.advance(2.5)
    assert b"atomic_gang_instance_seconds_total{" not in generate_latest(registry)
    leading = True
    text = generate_latest(registry).decode()
    assert 'atomic_gang_instance_seconds_total{pool="train",state="running"} 10.0' in text
    assert "# TYPE atomic_gang_instance_seconds_total counter" in text

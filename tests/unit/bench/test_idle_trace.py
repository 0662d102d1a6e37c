"""The idle-cost bench's ledger (bench/idle_trace.py)."""

from __future__ import annotations

from bench.idle_trace import Ledger


def test_free_capacity_counts_only_while_a_waiting_gang_would_fit_it() -> None:
    ledger = Ledger()
    ledger.add_free(0.5, free=6, missing=[8, 4])  # the 4-gang fits: 3 slot-s left free
    ledger.add_free(0.5, free=6, missing=[8])  # nobody fits 6
    ledger.add_free(0.5, free=10, missing=[])  # nobody waits
    ledger.add_free(0.5, free=-2, missing=[2])  # over-subscribed for a moment
    assert ledger.free_while_fitting == 3.0

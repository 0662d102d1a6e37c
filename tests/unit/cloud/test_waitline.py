"""Longest-waiting first, places kept across retries, silent pools dropped."""

from __future__ import annotations

from atomic_gang_provisioner.cloud.turns.waitline import WaitLine


def test_pools_are_ordered_by_when_they_started_waiting() -> None:
    line = WaitLine()
    assert line.ahead("late", since=30.0, now=0.0, hold=10) == 0
    assert line.ahead("early", since=10.0, now=0.0, hold=10) == 0
    assert line.ahead("late", since=30.0, now=1.0, hold=10) == 1
    assert [pool for _, pool in line.order()] == ["early", "late"]
    line.leave("early")
    assert line.ahead("late", since=30.0, now=1.0, hold=10) == 0


def test_a_place_not_renewed_within_its_hold_is_dropped() -> None:
    line = WaitLine()
    line.ahead("gone", since=1.0, now=0.0, hold=5)
    line.ahead("stays", since=2.0, now=0.0, hold=50)
    assert line.ahead("stays", since=2.0, now=4.0, hold=50) == 1
    assert line.ahead("stays", since=2.0, now=6.0, hold=50) == 0
    assert len(line) == 1


def test_a_renewal_extends_the_hold() -> None:
    line = WaitLine()
    line.ahead("a", since=1.0, now=0.0, hold=5)
    line.ahead("a", since=1.0, now=4.0, hold=5)
    assert line.ahead("b", since=2.0, now=8.0, hold=5) == 1  # a renewed at 4, holds to 9


def test_a_new_acquisition_takes_a_new_place() -> None:
    line = WaitLine()
    line.ahead("a", since=1.0, now=0.0, hold=5)
    line.ahead("b", since=2.0, now=0.0, hold=5)
    assert line.ahead("a", since=3.0, now=0.0, hold=5) == 1
    assert len(line) == 2

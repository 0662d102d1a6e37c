"""Jittered exponential backoff between acquire attempts ("equal jitter": a delay
lies in [raw/2, raw], raw = min(cap, base * 2^(attempt-1)))."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang_provisioner.pool.model import backoff_seconds

POOLS = ["pretrain", "a", "gang-p5-us-east-1b", "x" * 63]
SLACK = 0.001  # the result is rounded to milliseconds


def raw(attempt: int, base: float, cap: float) -> float:
    return min(cap, base * 2.0 ** max(0, attempt - 1))


@pytest.mark.parametrize(
    ("base", "cap"),
    [
        pytest.param(5.0, 60.0, id="defaults-like"),
        pytest.param(0.3, 1.0, id="e2e-short"),
        pytest.param(1.0, 3600.0, id="high-cap"),
    ],
)
@pytest.mark.parametrize("pool", POOLS)
def test_delays_grow_within_jitter_and_never_exceed_the_cap(
    pool: str, base: float, cap: float
) -> None:
    delays = [backoff_seconds(pool=pool, attempt=a, base=base, cap=cap) for a in range(1, 21)]
    for attempt, delay in enumerate(delays, start=1):
        r = raw(attempt, base, cap)
        assert r / 2 - SLACK <= delay <= r + SLACK, (attempt, delay, r)
        assert delay <= cap
    uncapped = [d for a, d in enumerate(delays, start=1) if base * 2 ** (a - 1) < cap]
    # below the cap the lower bound of one attempt is the upper bound of the one before
    assert uncapped == sorted(uncapped)
    assert delays[-1] >= cap / 2 - SLACK


@pytest.mark.parametrize(
    ("attempt", "low", "high"),
    [
        pytest.param(1, 2.5, 5.0, id="first"),
        pytest.param(2, 5.0, 10.0, id="second"),
        pytest.param(3, 10.0, 20.0, id="third"),
        pytest.param(4, 20.0, 40.0, id="fourth"),
        pytest.param(5, 30.0, 60.0, id="capped"),
        pytest.param(30, 30.0, 60.0, id="far-past-the-cap"),
        pytest.param(0, 2.5, 5.0, id="zero-is-the-first"),
    ],
)
def test_bounds_per_attempt(attempt: int, low: float, high: float) -> None:
    for pool in POOLS:
        delay = backoff_seconds(pool=pool, attempt=attempt, base=5, cap=60)
        assert low - SLACK <= delay <= high + SLACK


def test_jitter_spreads_pools_apart() -> None:
    delays = {backoff_seconds(pool=f"pool-{i}", attempt=3, base=5, cap=60) for i in range(50)}
    assert len(delays) > 10  # not every pool retries in lockstep


@given(
    pool=st.text(min_size=1, max_size=63),
    attempt=st.integers(min_value=1, max_value=200),
    base=st.floats(min_value=0.01, max_value=100),
    cap=st.floats(min_value=0.01, max_value=10_000),
)
def test_deterministic_per_pool_and_attempt(
    pool: str, attempt: int, base: float, cap: float
) -> None:
    first = backoff_seconds(pool=pool, attempt=attempt, base=base, cap=cap)
    assert first == backoff_seconds(pool=pool, attempt=attempt, base=base, cap=cap)
    assert 0 < first <= cap + SLACK
    assert first >= raw(attempt, base, cap) / 2 - SLACK

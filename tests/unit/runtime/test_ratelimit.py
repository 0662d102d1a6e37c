"""ExponentialBackoff: growth, cap, jitter bounds, forget."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang_provisioner.runtime import ExponentialBackoff


def test_doubles_until_the_cap() -> None:
    b = ExponentialBackoff(base_seconds=0.5, cap_seconds=10, jitter=0)
    assert [b.when("k") for _ in range(7)] == [0.5, 1, 2, 4, 8, 10, 10]


def test_keys_are_independent_and_forget_resets() -> None:
    b = ExponentialBackoff(base_seconds=1, cap_seconds=100, jitter=0)
    b.when("a")
    b.when("a")
    assert b.when("b") == 1
    assert b.num_requeues("a") == 2
    b.forget("a")
    assert b.num_requeues("a") == 0
    assert b.when("a") == 1


def test_many_failures_do_not_overflow() -> None:
    b = ExponentialBackoff(base_seconds=1, cap_seconds=300, jitter=0)
    for _ in range(5000):
        last = b.when("k")
    assert last == 300


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param({"base_seconds": 0}, "base_seconds", id="zero-base"),
        pytest.param({"base_seconds": 5, "cap_seconds": 1}, "base_seconds", id="cap-below-base"),
        pytest.param({"jitter": 1.0}, "jitter", id="jitter-one"),
        pytest.param({"jitter": -0.1}, "jitter", id="negative-jitter"),
    ],
)
def test_rejects_bad_parameters(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ExponentialBackoff(**kwargs)


@given(
    base=st.floats(min_value=0.001, max_value=10),
    factor=st.floats(min_value=1, max_value=1000),
    jitter=st.floats(min_value=0, max_value=0.99),
    failures=st.integers(min_value=1, max_value=80),
    seed=st.integers(),
)
def test_jittered_delay_stays_within_its_band(
    base: float, factor: float, jitter: float, failures: int, seed: int
) -> None:
    cap = base * factor
    b = ExponentialBackoff(
        base_seconds=base, cap_seconds=cap, jitter=jitter, rng=random.Random(seed)
    )
    for n in range(failures):
        ceiling = min(cap, base * 2**n)
        d = b.when("k")
        assert ceiling * (1 - jitter) - 1e-9 <= d <= ceiling + 1e-9

"""The system e2e's invariant checks, on scripted samples: each one can fail."""

from __future__ import annotations

import pytest

from tests.e2e.system.harness import Gate, assert_gated_on_full_gang, assert_warm_reuse_fast


def _gate(
    *, admitted: bool = False, check: bool = False, ready: int = 0, done: bool = False
) -> Gate:
    return Gate(admitted=admitted, check_ready=check, finished=done, group="p-g1", ready=ready)


FORMING = [_gate(ready=n) for n in range(4)]


def test_admission_on_a_full_gang_passes() -> None:
    assert_gated_on_full_gang(
        [*FORMING, _gate(check=True, ready=4), _gate(admitted=True, ready=4)], 4
    )


@pytest.mark.parametrize(
    "late",
    [
        pytest.param(_gate(admitted=True, ready=3), id="admitted-with-3-of-4"),
        pytest.param(_gate(check=True, ready=3), id="check-ready-with-3-of-4"),
    ],
)
def test_an_open_gate_on_a_partial_gang_fails(late: Gate) -> None:
    with pytest.raises(AssertionError, match="partial gang"):
        assert_gated_on_full_gang([*FORMING, late, _gate(admitted=True, ready=4)], 4)


def test_never_admitted_fails() -> None:
    with pytest.raises(AssertionError, match="no sample saw the Workload admitted"):
        assert_gated_on_full_gang(FORMING, 4)


def test_a_finished_workload_may_lose_its_nodes() -> None:
    released = _gate(admitted=True, ready=0, done=True)
    assert_gated_on_full_gang([*FORMING, _gate(admitted=True, ready=4), released], 4)


def test_warm_reuse_budget() -> None:
    assert_warm_reuse_fast(1.9)
    with pytest.raises(AssertionError, match=r"budget 2\.0s"):
        assert_warm_reuse_fast(2.1)

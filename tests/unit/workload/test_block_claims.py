"""The Workload side of capacity reservations: the claimant's min-runtime and
reservations reach the pool's spec, and what the pool reports about a block (through
the status contract only) becomes the check."""

from __future__ import annotations

from typing import Any

from atomic_gang import keys
from tests.support.jobs import gang_job
from tests.support.pools import pool, reported
from tests.unit.workload.test_decide import _claimed_pool, run, workload

A, B = "cr-0123456789abcdef0", "cr-0fedcba9876543210"


def blocks(**more: str) -> dict[str, Any]:
    return gang_job(annotations={keys.CAPACITY_RESERVATION_ID: f"{A},{B}", **more})


def test_a_new_pool_carries_the_list_and_min_runtime() -> None:
    plan = run(owner=blocks(**{keys.MIN_RUNTIME: "2h"}))
    assert plan.create_pool is not None
    spec = plan.create_pool.spec
    assert (spec.shape.capacityReservationId, spec.minRuntime) == (f"{A},{B}", "2h0m0s")


def test_a_claim_passes_this_jobs_min_runtime_or_clears_it() -> None:
    free = reported(pool(claim=None, phase="Idle"))
    with_it = run(pool=free, owner=blocks(**{keys.MIN_RUNTIME: "90m"})).spec_change
    without = run(pool=free, owner=blocks()).spec_change
    assert with_it is not None
    assert without is not None
    assert (with_it.min_runtime, without.min_runtime) == ("1h30m0s", None)


def test_an_empty_pool_takes_this_jobs_reservations_a_warm_one_keeps_its_set() -> None:
    empty = reported(pool(claim=None, phase="Idle"))
    change = run(pool=empty, owner=blocks()).spec_change
    assert change is not None
    assert change.shape is not None
    assert change.shape.capacityReservationId == f"{A},{B}"
    warm = reported(pool(claim=None, phase="KeepWarm", instanceIds=["i-1"]))
    kept = run(pool=warm, owner=blocks()).spec_change
    assert kept is not None
    assert kept.shape is None  # same shape: the warm set is reused as it is


def test_a_block_to_come_keeps_the_check_pending_with_its_start() -> None:
    msg = f"Capacity Block {A} starts at 2026-11-29T15:00:00Z (in 3h00m)"
    p = _claimed_pool(
        phase="Acquiring",
        lastErrorReason="CapacityReservationNotStarted",
        lastError=msg,
        instanceIds=[],
        consecutiveShortfalls=0,
    )
    (update,) = run(pool=p).checks
    assert update.state == "Pending"
    assert update.message == f"{msg}; holding quota, nothing billed"


def test_the_drain_point_turns_a_ready_check_into_retry_with_the_reason() -> None:
    p = _claimed_pool(
        phase="Degraded",
        degradedClaimKey=_claimed_pool().spec.claim.key,
        lastErrorReason="CapacityBlockEnding",
        lastError=f"Capacity Block {A} reached its drain point 2026-11-29T14:20:00Z",
    )
    (update,) = run(workload(state="Ready"), pool=p).checks
    assert update.state == "Retry"
    assert "CapacityBlockEnding" in update.message
    assert A in update.message

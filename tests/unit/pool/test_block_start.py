"""Capacity reservations on the pool side, before and at the launch: the block policy
the adapter is asked with, waiting for a block's start at no cost, the reservation
recorded at launch, and the outcomes when no listed reservation can take the gang."""

from __future__ import annotations

from datetime import timedelta

import pytest

from atomic_gang_provisioner.api import conditions as c
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AwaitingReservation,
    Launched,
    PermanentFailure,
    Shortfall,
    ZoneAttempt,
)
from atomic_gang_provisioner.pool.outcomes import BlockWait
from atomic_gang_provisioner.pool.rules import block
from tests.support.pools import KNOBS, T0, decide, instances, launch_asked, observed
from tests.unit.pool.blocks import (
    END,
    START,
    acquiring,
    after,
    cblock,
    condition,
)

# -- what the adapter is asked -------------------------------------------------------


@pytest.mark.parametrize(
    ("min_runtime", "needed", "source"),
    [
        pytest.param(
            None, KNOBS.block_min_remaining, "capacityBlock.minRemainingSeconds", id="setting"
        ),
        pytest.param(
            "2h", timedelta(hours=2), "atomic-gang.k8s.aws/min-runtime 2h", id="min-runtime"
        ),
        pytest.param(
            "soon", KNOBS.block_min_remaining, "capacityBlock.minRemainingSeconds", id="malformed"
        ),
    ],
)
def test_the_request_carries_the_claimants_block_policy(
    min_runtime: str | None, needed: timedelta, source: str
) -> None:
    p = acquiring()
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"minRuntime": min_runtime})})
    asked = launch_asked(decide(p, observed(), T0))
    assert asked is not None
    policy = asked.block_policy
    assert (policy.drain_lead, policy.needed, policy.needed_from) == (
        KNOBS.block_drain_lead,
        needed,
        source,
    )


# -- waiting for a block -------------------------------------------------------------


def test_a_block_not_started_sleeps_until_its_start_at_no_cost() -> None:
    msg = "Capacity Block cr-0123456789abcdef0 starts at 2026-11-29T12:01:00Z (in 1m)"
    decision = after(acquiring(), AwaitingReservation(message=msg, starts_at=START))
    s = decision.status
    assert decision.requeue_after == 60.0  # one wake-up at the start: no polling loop
    assert (s.nextAttemptAt, s.lastErrorReason, s.waitingSince) == (START, block.WAITING, T0)
    assert s.consecutiveShortfalls == 0  # no attempt spent
    assert s.acquireGeneration == 8  # nothing launched: the next try has tokens of its own
    ready = condition(decision, c.READY)
    assert (ready.status, ready.reason) == ("False", block.WAITING)
    assert ready.message == f"{msg}; holding quota, nothing billed"
    assert condition(decision, c.CAPACITY_SHORTFALL).status == "False"
    assert condition(decision, c.FAILED).status == "False"
    assert [e.reason for e in decision.events] == [block.WAITING]


def test_waiting_again_sends_no_second_event_and_keeps_its_start() -> None:
    msg = "Capacity Block cr-0123456789abcdef0 starts at 2026-11-29T12:01:00Z (in 30s)"
    p = acquiring(lastErrorReason=block.WAITING, lastError=msg, waitingSince=T0)
    now = T0 + timedelta(seconds=30)
    decision = after(p, AwaitingReservation(message=msg, starts_at=START), now=now)
    assert decision.events == ()
    assert decision.status.waitingSince == T0
    assert decision.requeue_after == 30.0


def test_the_pool_stays_asleep_before_the_start() -> None:
    p = acquiring(lastErrorReason=block.WAITING, nextAttemptAt=START, waitingSince=T0)
    decision = decide(p, observed(), T0 + timedelta(seconds=59))
    assert launch_asked(decision) is None
    assert decision.requeue_after == pytest.approx(1.0)
    assert launch_asked(decide(p, observed(), START)) is not None  # at the start: launch


def test_a_start_that_passed_without_the_block_active_is_looked_at_again_soon() -> None:
    msg = "Capacity Block cr-0123456789abcdef0 is not active yet (scheduled)"
    decision = after(acquiring(), AwaitingReservation(message=msg, starts_at=None))
    assert decision.requeue_after == block.NOT_ACTIVE_POLL


# -- launched into a reservation -----------------------------------------------------


def test_a_launch_into_a_block_records_it_and_the_wait() -> None:
    insts = instances()
    result = Launched(instances=insts, client_token="t", reservation=cblock())
    p = acquiring(waitingSince=T0 - timedelta(seconds=90))
    decision = after(p, result)
    s = decision.status
    assert (s.reservationId, s.reservationEnd, s.capacityBlock) == (
        "cr-0123456789abcdef0",
        END,
        True,
    )
    assert s.waitingSince is None
    assert [m for m in decision.metrics if isinstance(m, BlockWait)] == [BlockWait(90.0)]
    launched_event = decision.events[-1]
    assert "in Capacity Block cr-0123456789abcdef0 (ends 2026-11-29T15:00:00Z" in (
        launched_event.message
    )
    assert "drained at 2026-11-29T14:20:00Z" in condition(decision, c.READY).message


def test_an_odcr_launch_has_no_drain_point() -> None:
    odcr = cblock(capacity_block=False, end=None)
    decision = after(
        acquiring(), Launched(instances=instances(), client_token="t", reservation=odcr)
    )
    assert decision.status.capacityBlock is False
    assert block.drain_point(decision.status, KNOBS) is None
    assert "capacity reservation cr-0123456789abcdef0 (no end date)" in (
        condition(decision, c.READY).message
    )
    assert not [m for m in decision.metrics if isinstance(m, BlockWait)]


# -- the reservation cannot take the gang --------------------------------------------


def test_a_reservation_that_never_fits_rejects_the_claimant() -> None:
    why = (
        "cr-0123456789abcdef0 reserves instance type p5.48xlarge; the gang uses p4d.24xlarge"
        " (atomic-gang.k8s.aws/instance-type)"
    )
    result = PermanentFailure(
        code="CapacityReservationMismatch",
        message=why,
        reason=FailureReason.CAPACITY_RESERVATION_MISMATCH,
    )
    failed = condition(after(acquiring(), result), c.FAILED)
    assert (failed.status, failed.checkState) == ("True", "Rejected")
    assert why in failed.message


@pytest.mark.parametrize(
    "reason", [FailureReason.CAPACITY_BLOCK_TOO_SHORT, FailureReason.CAPACITY_BLOCK_ENDING]
)
def test_a_block_too_short_or_ending_gives_retry_with_the_reason(reason: FailureReason) -> None:
    why = "Capacity Block cr-0123456789abcdef0 leaves 20m before its drain point"
    result = PermanentFailure(code=reason, message=why, reason=reason)
    failed = condition(after(acquiring(), result), c.FAILED)
    assert (failed.status, failed.reason, failed.checkState) == ("True", reason, "Retry")
    assert failed.message.startswith("Cannot start 4×p4d.24xlarge")
    assert why in failed.message


def test_a_reservation_short_of_instances_is_a_shortfall_with_the_count() -> None:
    attempt = ZoneAttempt(
        zone="us-east-1a",
        code="ReservationCapacityShort",
        message="cr-0123456789abcdef0: 3/4 available (active); the gang needs 4",
    )
    decision = after(acquiring(), Shortfall(attempts=(attempt,)))
    short = condition(decision, c.CAPACITY_SHORTFALL)
    assert short.status == "True"
    assert "3/4 available" in short.message
    assert "attempt 1/3" in condition(decision, c.READY).message
    assert decision.requeue_after is not None
    assert decision.requeue_after > 0


def test_an_unused_block_request_is_plain() -> None:
    asked = launch_asked(decide(acquiring(), observed(), T0))
    assert isinstance(asked, AcquireRequest)
    assert asked.also_reservations == ()

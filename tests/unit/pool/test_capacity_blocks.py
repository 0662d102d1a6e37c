"""Capacity reservations on the pool side: every branch of the decisions that wait for
a block, launch into it, warn of its end, drain it and release it, with the clock
injected (T0)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api import conditions as c
from atomic_gang_provisioner.cloud.reservations import Reservation
from atomic_gang_provisioner.cloud.types import (
    AcquireRequest,
    AwaitingReservation,
    Launched,
    PermanentFailure,
    ReleaseResult,
    Shortfall,
    ZoneAttempt,
)
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.model import Plan, with_status
from atomic_gang_provisioner.pool.phases import block
from tests.support.pools import IDS, KEY, KNOBS, T0, instances, launched, nodes, observed, pool

START = T0 + timedelta(seconds=60)
END = T0 + timedelta(hours=3)
DRAIN = END - KNOBS.block_drain_lead  # T0 + 2h20m
WARN = DRAIN - KNOBS.block_warning_lead  # T0 + 2h10m
RELEASE_BY = END - timedelta(minutes=31)  # a minute before EC2's own termination


def cblock(**fields: Any) -> Reservation:
    base: dict[str, Any] = {
        "reservation_id": "cr-0123456789abcdef0",
        "instance_type": "p4d.24xlarge",
        "zone": "us-east-1a",
        "state": "active",
        "total": 4,
        "available": 0,
        "capacity_block": True,
        "start": T0,
        "end": END,
        **fields,
    }
    return Reservation(**base)


def acquiring(**status: Any) -> GangNodePool:
    base: dict[str, Any] = {"phase": "Acquiring", "claimKey": KEY, "acquireGeneration": 7}
    return pool(**{**base, **status})


def after(p: GangNodePool, result: Any, *, now: Any = T0) -> Plan:
    decided = machine.decide(p, observed(), now)
    assert decided.acquire is not None
    return machine.after_acquire(
        p, decided, request=decided.acquire, result=result, now=now, knobs=KNOBS
    )


def condition(plan: Plan, type_: c.ConditionType) -> Any:
    return c.condition(plan.status, type_)


def in_block(**status: Any) -> GangNodePool:
    base: dict[str, Any] = {
        "phase": "Satisfied",
        "readyCount": 4,
        "reservationId": "cr-0123456789abcdef0",
        "reservationEnd": END,
        "capacityBlock": True,
    }
    return launched(**{**base, **status})


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
    ],
)
def test_the_request_carries_the_claimants_block_policy(
    min_runtime: str | None, needed: timedelta, source: str
) -> None:
    p = acquiring()
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"minRuntime": min_runtime})})
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    policy = plan.acquire.block_policy
    assert (policy.drain_lead, policy.needed, policy.needed_from) == (
        KNOBS.block_drain_lead,
        needed,
        source,
    )


# -- waiting for a block -------------------------------------------------------------


def test_a_block_not_started_sleeps_until_its_start_at_no_cost() -> None:
    msg = "Capacity Block cr-0123456789abcdef0 starts at 2026-11-29T12:01:00Z (in 1m)"
    plan = after(acquiring(), AwaitingReservation(message=msg, starts_at=START))
    s = plan.status
    assert plan.requeue_after == 60.0  # one wake-up at the start: no polling loop
    assert (s.nextAttemptAt, s.lastErrorReason, s.waitingSince) == (START, block.WAITING, T0)
    assert s.consecutiveShortfalls == 0  # no attempt spent
    assert s.acquireGeneration == 8  # nothing launched: the next try has tokens of its own
    ready = condition(plan, c.READY)
    assert (ready.status, ready.reason) == ("False", block.WAITING)
    assert ready.message == f"{msg}; holding quota, nothing billed"
    assert condition(plan, c.CAPACITY_SHORTFALL).status == "False"
    assert condition(plan, c.FAILED).status == "False"
    assert [e.reason for e in plan.events] == [block.WAITING]


def test_waiting_again_sends_no_second_event_and_keeps_its_start() -> None:
    msg = "Capacity Block cr-0123456789abcdef0 starts at 2026-11-29T12:01:00Z (in 30s)"
    p = acquiring(lastErrorReason=block.WAITING, lastError=msg, waitingSince=T0)
    now = T0 + timedelta(seconds=30)
    plan = after(p, AwaitingReservation(message=msg, starts_at=START), now=now)
    assert plan.events == ()
    assert plan.status.waitingSince == T0
    assert plan.requeue_after == 30.0


def test_the_pool_stays_asleep_before_the_start() -> None:
    p = acquiring(lastErrorReason=block.WAITING, nextAttemptAt=START, waitingSince=T0)
    plan = machine.decide(p, observed(), T0 + timedelta(seconds=59))
    assert plan.acquire is None
    assert plan.requeue_after == pytest.approx(1.0)
    assert machine.decide(p, observed(), START).acquire is not None  # at the start: launch


def test_a_start_that_passed_without_the_block_active_is_looked_at_again_soon() -> None:
    msg = "Capacity Block cr-0123456789abcdef0 is not active yet (scheduled)"
    plan = after(acquiring(), AwaitingReservation(message=msg, starts_at=None))
    assert plan.requeue_after == block.NOT_ACTIVE_POLL


# -- launched into a reservation -----------------------------------------------------


def test_a_launch_into_a_block_records_it_and_the_wait() -> None:
    insts = instances()
    result = Launched(instances=insts, client_token="t", reservation=cblock())
    p = acquiring(waitingSince=T0 - timedelta(seconds=90))
    plan = after(p, result)
    s = plan.status
    assert (s.reservationId, s.reservationEnd, s.capacityBlock) == (
        "cr-0123456789abcdef0",
        END,
        True,
    )
    assert s.waitingSince is None
    assert [(m.name, m.value) for m in plan.metrics if m.name == "block_wait"] == [
        ("block_wait", 90.0)
    ]
    launched_event = plan.events[-1]
    assert "in Capacity Block cr-0123456789abcdef0 (ends 2026-11-29T15:00:00Z" in (
        launched_event.message
    )
    assert "drained at 2026-11-29T14:20:00Z" in condition(plan, c.READY).message


def test_an_odcr_launch_has_no_drain_point() -> None:
    odcr = cblock(capacity_block=False, end=None)
    plan = after(acquiring(), Launched(instances=instances(), client_token="t", reservation=odcr))
    assert plan.status.capacityBlock is False
    assert block.drain_point(plan.status, KNOBS) is None
    assert "capacity reservation cr-0123456789abcdef0 (no end date)" in (
        condition(plan, c.READY).message
    )
    assert not [m for m in plan.metrics if m.name == "block_wait"]


# -- the reservation cannot take the gang --------------------------------------------


def test_a_reservation_that_never_fits_rejects_the_claimant() -> None:
    why = (
        "cr-0123456789abcdef0 reserves instance type p5.48xlarge; the gang uses p4d.24xlarge"
        " (atomic-gang.k8s.aws/instance-type)"
    )
    result = PermanentFailure(
        code="CapacityReservationMismatch",
        message=why,
        reason="CapacityReservationMismatch",
        rejects=True,
    )
    failed = condition(after(acquiring(), result), c.FAILED)
    assert (failed.status, failed.checkState) == ("True", "Rejected")
    assert why in failed.message


@pytest.mark.parametrize("reason", ["CapacityBlockTooShort", "CapacityBlockEnding"])
def test_a_block_too_short_or_ending_gives_retry_with_the_reason(reason: str) -> None:
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
    plan = after(acquiring(), Shortfall(attempts=(attempt,)))
    short = condition(plan, c.CAPACITY_SHORTFALL)
    assert short.status == "True"
    assert "3/4 available" in short.message
    assert "attempt 1/3" in condition(plan, c.READY).message
    assert plan.requeue_after is not None
    assert plan.requeue_after > 0


# -- the end of a block --------------------------------------------------------------


def watched(p: GangNodePool, now: Any) -> Plan:
    return machine.decide(p, observed(nodes(4)), now)


def test_a_gang_in_a_block_sleeps_until_the_warning() -> None:
    plan = watched(in_block(), T0)
    assert plan.status.phase == "Satisfied"
    assert plan.events == ()
    assert plan.requeue_after == (WARN - T0).total_seconds()


def test_the_warning_comes_once_before_the_drain_point() -> None:
    plan = watched(in_block(), WARN)
    assert [e.reason for e in plan.events] == ["CapacityBlockEnding"]
    assert plan.events[0].type == "Warning"
    assert "drain point 2026-11-29T14:20:00Z (in 10m)" in plan.events[0].message
    assert plan.status.blockEndingWarned is True
    assert plan.requeue_after == (DRAIN - WARN).total_seconds()
    again = watched(in_block(blockEndingWarned=True), WARN + timedelta(minutes=1))
    assert again.events == ()
    assert again.requeue_after == (DRAIN - WARN - timedelta(minutes=1)).total_seconds()


def test_at_the_drain_point_the_claimant_gets_retry_and_the_set_is_held() -> None:
    plan = watched(in_block(blockEndingWarned=True), DRAIN)
    s = plan.status
    assert (s.phase, s.degradedClaimKey, s.lastErrorReason) == (
        "Degraded",
        KEY,
        "CapacityBlockEnding",
    )
    assert plan.release is None  # the evicted pods stop gracefully first
    assert plan.requeue_after == (RELEASE_BY - DRAIN).total_seconds()
    degraded = condition(plan, c.DEGRADED)
    assert (degraded.status, degraded.reason) == ("True", "CapacityBlockEnding")
    assert "reached its drain point 2026-11-29T14:20:00Z" in degraded.message
    read = c.for_claim(with_status(in_block(), s).model_copy(), KEY)
    assert read.degraded is not None
    assert read.degraded.reason == "CapacityBlockEnding"


def drained(**status: Any) -> GangNodePool:
    return in_block(
        phase="Degraded",
        degradedClaimKey=KEY,
        lastErrorReason="CapacityBlockEnding",
        lastError="drain",
        **status,
    )


def test_a_drained_set_is_released_once_the_claim_drops() -> None:
    held = machine.decide(drained(), observed(nodes(4)), DRAIN + timedelta(seconds=5))
    assert held.release is None
    p = drained().model_copy(update={"spec": drained().spec.model_copy(update={"claim": None})})
    gone = machine.decide(p, observed(nodes(4)), DRAIN + timedelta(seconds=5))
    assert gone.release is not None
    assert gone.release.instance_ids == tuple(IDS)


def test_a_drained_set_is_released_before_ec2_terminates_it_whatever_the_claim() -> None:
    plan = machine.decide(drained(), observed(nodes(4)), RELEASE_BY)
    assert plan.release is not None
    assert END - timedelta(minutes=30) > RELEASE_BY  # EC2's own termination comes later


def test_a_released_set_forgets_its_reservation() -> None:
    p = drained()
    plan = machine.after_release(
        p,
        Plan(status=p.status),
        result=ReleaseResult(terminated=tuple(IDS)),
        now=DRAIN,
        knobs=KNOBS,
    )
    s = plan.status
    assert (s.reservationId, s.reservationEnd, s.capacityBlock, s.instanceIds) == (
        "",
        None,
        False,
        [],
    )


def unclaimed(**status: Any) -> GangNodePool:
    p = in_block(**status)
    return p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})})


def test_a_warm_set_never_outlives_its_blocks_drain_point() -> None:
    plan = watched(unclaimed(), DRAIN - timedelta(minutes=5))  # keep-warm 15m > 5m left
    assert plan.status.phase == "KeepWarm"
    assert plan.status.keepWarmUntil == DRAIN
    past = watched(unclaimed(), DRAIN)
    assert past.status.phase == "Releasing"  # written ahead; the release follows
    assert past.events[-1].reason == "CapacityBlockEnding"


def test_an_unused_block_request_is_plain() -> None:
    plan = machine.decide(acquiring(), observed(), T0)
    assert isinstance(plan.acquire, AcquireRequest)
    assert plan.acquire.also_reservations == ()

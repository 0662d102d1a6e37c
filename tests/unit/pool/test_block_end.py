"""Capacity Blocks on the pool side, at their end: the warning before the drain point,
the drain (Retry for the claimant, the set held for its pods), the release before EC2
terminates the block, and a warm set capped at the drain point."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api import conditions as c
from atomic_gang_provisioner.cloud.types import (
    ReleaseResult,
)
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.model import Plan, with_status
from tests.support.pools import IDS, KEY, KNOBS, T0, nodes, observed
from tests.unit.pool.blocks import (
    DRAIN,
    END,
    RELEASE_BY,
    WARN,
    condition,
    in_block,
)

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
    assert plan.requeue_after == 300.0  # wakes at the drain point, not after the full TTL
    past = watched(unclaimed(), DRAIN)
    assert past.status.phase == "Releasing"  # written ahead; the release follows
    assert past.events[-1].reason == "CapacityBlockEnding"


def test_a_warm_block_set_too_short_for_the_new_claimant_is_released_not_reused() -> None:
    warm = in_block(phase="KeepWarm", keepWarmUntil=DRAIN, claimKey="")
    p = warm.model_copy(update={"spec": warm.spec.model_copy(update={"minRuntime": "1h"})})
    now = DRAIN - timedelta(minutes=20)  # 20 min left, the claimant needs 1h
    plan = machine.decide(p, observed(nodes(4)), now)
    assert plan.status.phase == "Releasing"
    assert plan.events[-1].reason == "CapacityBlockTooShort"
    assert "leaves 20m before its drain point" in plan.events[-1].message
    enough = machine.decide(p, observed(nodes(4)), DRAIN - timedelta(hours=2))
    assert enough.status.phase == "Satisfied"  # reused: 2h left is enough


def test_a_set_still_joining_at_the_drain_point_is_released() -> None:
    joining = in_block(phase="Joining", readyCount=0, joinDeadline=END)
    early = machine.decide(joining, observed(nodes(2)), DRAIN - timedelta(seconds=30))
    assert early.requeue_after == 30.0  # the drain point comes before the join deadline
    late = machine.decide(joining, observed(nodes(2)), DRAIN)
    assert late.status.phase == "Releasing"
    assert late.events[-1].reason == "CapacityBlockEnding"

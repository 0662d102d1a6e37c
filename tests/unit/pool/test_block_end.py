"""Capacity Blocks on the pool side, at their end: the warning before the drain point,
the drain (Retry for the claimant, the set held for its pods), the release before EC2
terminates the block, and a warm set capped at the drain point."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api import conditions as c
from atomic_gang_provisioner.cloud.values import ReleaseResult
from atomic_gang_provisioner.pool.driver import Decision
from atomic_gang_provisioner.pool.model import with_status
from tests.support.pools import IDS, KEY, T0, decide, nodes, observed, release_asked
from tests.unit.pool.blocks import (
    DRAIN,
    END,
    RELEASE_BY,
    WARN,
    condition,
    in_block,
)

# -- the end of a block --------------------------------------------------------------


def watched(p: GangNodePool, now: Any) -> Decision:
    return decide(p, observed(nodes(4)), now)


def test_a_gang_in_a_block_sleeps_until_the_warning() -> None:
    decision = watched(in_block(), T0)
    assert decision.status.phase == "Satisfied"
    assert decision.events == ()
    assert decision.requeue_after == (WARN - T0).total_seconds()


def test_the_warning_comes_once_before_the_drain_point() -> None:
    decision = watched(in_block(), WARN)
    assert [e.reason for e in decision.events] == ["CapacityBlockEnding"]
    assert decision.events[0].type == "Warning"
    assert "drain point 2026-11-29T14:20:00Z (in 10m)" in decision.events[0].message
    assert decision.status.blockEndingWarned is True
    assert decision.requeue_after == (DRAIN - WARN).total_seconds()
    again = watched(in_block(blockEndingWarned=True), WARN + timedelta(minutes=1))
    assert again.events == ()
    assert again.requeue_after == (DRAIN - WARN - timedelta(minutes=1)).total_seconds()


def test_at_the_drain_point_the_claimant_gets_retry_and_the_set_is_held() -> None:
    decision = watched(in_block(blockEndingWarned=True), DRAIN)
    s = decision.status
    assert (s.phase, s.degradedClaimKey, s.lastErrorReason) == (
        "Degraded",
        KEY,
        "CapacityBlockEnding",
    )
    assert decision.waiting_on is None  # no release asked: the evicted pods stop gracefully first
    assert decision.requeue_after == (RELEASE_BY - DRAIN).total_seconds()
    degraded = condition(decision, c.DEGRADED)
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
    held = decide(drained(), observed(nodes(4)), DRAIN + timedelta(seconds=5))
    assert held.waiting_on is None
    p = drained().model_copy(update={"spec": drained().spec.model_copy(update={"claim": None})})
    gone = release_asked(decide(p, observed(nodes(4)), DRAIN + timedelta(seconds=5)))
    assert gone is not None
    assert gone.instance_ids == tuple(IDS)


def test_a_drained_set_is_released_before_ec2_terminates_it_whatever_the_claim() -> None:
    decision = decide(drained(), observed(nodes(4)), RELEASE_BY)
    assert release_asked(decision) is not None
    assert END - timedelta(minutes=30) > RELEASE_BY  # EC2's own termination comes later


def test_a_released_set_forgets_its_reservation() -> None:
    released = replace(observed(nodes(4)), release=ReleaseResult(terminated=tuple(IDS)))
    decision = decide(drained(), released, RELEASE_BY)
    s = decision.status
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
    decision = watched(unclaimed(), DRAIN - timedelta(minutes=5))  # keep-warm 15m > 5m left
    assert decision.status.phase == "KeepWarm"
    assert decision.status.keepWarmUntil == DRAIN
    assert decision.requeue_after == 300.0  # wakes at the drain point, not after the full TTL
    past = watched(unclaimed(), DRAIN)
    assert past.status.phase == "Releasing"  # written ahead; the release follows
    assert past.events[-1].reason == "CapacityBlockEnding"


def test_a_warm_block_set_too_short_for_the_new_claimant_is_released_not_reused() -> None:
    warm = in_block(phase="KeepWarm", keepWarmUntil=DRAIN, claimKey="")
    p = warm.model_copy(update={"spec": warm.spec.model_copy(update={"minRuntime": "1h"})})
    now = DRAIN - timedelta(minutes=20)  # 20 min left, the claimant needs 1h
    decision = decide(p, observed(nodes(4)), now)
    assert decision.status.phase == "Releasing"
    assert decision.events[-1].reason == "CapacityBlockTooShort"
    assert "leaves 20m before its drain point" in decision.events[-1].message
    enough = decide(p, observed(nodes(4)), DRAIN - timedelta(hours=2))
    assert enough.status.phase == "Satisfied"  # reused: 2h left is enough


def test_a_set_still_joining_at_the_drain_point_is_released() -> None:
    joining = in_block(phase="Joining", readyCount=0, joinDeadline=END)
    early = decide(joining, observed(nodes(2)), DRAIN - timedelta(seconds=30))
    assert early.requeue_after == 30.0  # the drain point comes before the join deadline
    late = decide(joining, observed(nodes(2)), DRAIN)
    assert late.status.phase == "Releasing"
    assert late.events[-1].reason == "CapacityBlockEnding"

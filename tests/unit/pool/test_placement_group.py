"""The pool's own placement group: recorded before the launch that makes it, reused
across generations and keep-warm, deleted once the last instance is gone (InUse
retried), before the finalizer; EFA and security-group refusals reject the Job."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.aws.acquire import failure
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.values import ReleaseResult, Shortfall, ZoneAttempt
from atomic_gang_provisioner.pool.driver import Decision
from atomic_gang_provisioner.pool.model import with_status
from atomic_gang_provisioner.pool.story import DeleteGroup, Launch
from tests.support.pools import (
    CLAIM,
    IDS,
    KEY,
    KNOBS,
    T0,
    decide,
    instances,
    launch_asked,
    launched,
    nodes,
    observed,
    pool,
)
from tests.unit.pool.test_topology import shaped

GROUP = naming.placement_group_name(cluster=KNOBS.cluster, pool="pretrain")


def acquiring(**shape: Any) -> Any:
    return shaped(pool(phase="Acquiring", claimKey=KEY), **shape)


def launching(decision: Decision) -> Launch:
    """The launch the decision asks to make now (its status is the one written with the
    result)."""
    assert decision.parked
    assert isinstance(decision.waiting_on, Launch)
    return decision.waiting_on


def deletes_group(decision: Decision) -> bool:
    """The decision asks to delete the pool's own placement group now."""
    return decision.parked and isinstance(decision.waiting_on, DeleteGroup)


def test_own_group_is_recorded_with_the_launch_that_may_create_it() -> None:
    launch = launching(decide(acquiring(placement="cluster"), observed(), T0))
    assert launch.request.spec.placement == "cluster"
    assert launch.status.placementGroup == GROUP


def test_first_acquisition_writes_the_group_ahead_of_the_launch() -> None:
    p = shaped(pool(), placement="cluster")
    decision = decide(p, observed(), T0)
    assert launch_asked(decision) is None  # write-ahead: the name is stored before EC2 sees it
    assert decision.status.placementGroup == GROUP


def test_a_named_group_is_the_users_and_never_recorded() -> None:
    launch = launching(decide(acquiring(placementGroupName="team-pg"), observed(), T0))
    assert launch.request.spec.placement_group_name == "team-pg"
    assert launch.status.placementGroup == ""


def test_no_placement_no_group() -> None:
    launch = launching(decide(acquiring(), observed(), T0))
    assert launch.status.placementGroup == ""


def test_a_group_that_cannot_hold_n_is_a_shortfall() -> None:
    p = acquiring(placement="cluster")
    assert launch_asked(decide(p, observed(), T0)) is not None
    ice = Shortfall(
        attempts=(ZoneAttempt(zone="us-east-1a", code="InsufficientInstanceCapacity", message="3"),)
    )
    after = decide(p, replace(observed(), launch=ice), T0)
    assert after.status.lastErrorReason == "InsufficientCapacity"
    assert after.status.placementGroup == GROUP  # kept for the next attempt
    assert after.status.instanceIds == []


def test_release_between_generations_keeps_the_group() -> None:
    p = shaped(launched(phase="Releasing", placementGroup=GROUP), placement="cluster")
    after = decide(p, replace(observed(), release=ReleaseResult()), T0)
    assert after.status.phase == "Acquiring"
    assert after.status.placementGroup == GROUP
    assert after.waiting_on is None  # no group deleted


def test_idle_without_claim_deletes_the_group_after_the_last_instance() -> None:
    p = shaped(launched(phase="Releasing", placementGroup=GROUP), placement="cluster")
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})})
    after = decide(p, replace(observed(), release=ReleaseResult()), T0)
    assert after.status.phase == "Idle"
    assert after.waiting_on is None
    assert after.requeue_after == KNOBS.release_poll  # the next round deletes the group
    idle = decide(with_status(p, after.status), observed(), T0)
    assert deletes_group(idle)


def test_group_still_in_use_is_asked_again_not_an_error() -> None:
    p = pool(claim=None, placementGroup=GROUP)
    assert deletes_group(decide(p, observed(), T0))
    after = decide(p, replace(observed(), group_deleted=False), T0)
    assert after.status.placementGroup == GROUP
    assert after.requeue_after == KNOBS.release_poll
    assert after.status.lastErrorReason == ""
    assert after.events == ()


def test_group_deleted_is_forgotten_with_an_event() -> None:
    p = pool(claim=None, placementGroup=GROUP)
    assert deletes_group(decide(p, observed(), T0))
    after = decide(p, replace(observed(), group_deleted=True), T0)
    assert after.status.placementGroup == ""
    assert [(e.reason, e.message) for e in after.events] == [
        ("PlacementGroupDeleted", f"Deleted placement group {GROUP}")
    ]
    assert after.remove_finalizer is False
    again = decide(with_status(p, after.status), observed(), T0)
    assert again.waiting_on is None


def test_a_claim_on_an_idle_pool_reuses_its_group() -> None:
    p = shaped(pool(claim=CLAIM, placementGroup=GROUP), placement="cluster")
    decision = decide(p, observed(), T0)
    assert not isinstance(decision.waiting_on, DeleteGroup)
    assert decision.status.phase == "Acquiring"


def test_keep_warm_reuse_keeps_group_and_topology() -> None:
    warm = launched(
        phase="KeepWarm",
        claimKey="",
        placementGroup=GROUP,
        networkNodes={i: ["a", "b"] for i in IDS},
        spread=1,
        keepWarmUntil=T0,
    )
    decision = decide(warm, observed(nodes(4), instances()), T0)
    assert decision.status.phase == "Satisfied"
    assert (decision.status.placementGroup, decision.status.spread) == (GROUP, 1)


def test_deleted_pool_deletes_its_group_before_the_finalizer() -> None:
    p = pool(claim=None, deleting=True, placementGroup=GROUP)
    decision = decide(p, observed(), T0)
    assert (deletes_group(decision), decision.remove_finalizer) == (True, False)
    after = decide(p, replace(observed(), group_deleted=True), T0)
    assert after.remove_finalizer is True


def test_deleted_pool_releasing_keeps_the_finalizer_while_its_group_exists() -> None:
    p = launched(phase="Releasing", placementGroup=GROUP)
    p = p.model_copy(
        update={"metadata": {**p.metadata, "deletionTimestamp": "2026-11-29T12:00:00Z"}}
    )
    after = decide(p, replace(observed(), release=ReleaseResult()), T0)
    assert after.remove_finalizer is False
    assert after.requeue_after == KNOBS.release_poll
    final = decide(with_status(p, after.status), observed(), T0)
    assert deletes_group(final)


def _rejected(code: str, message: str) -> tuple[str, str | None, str]:
    p = acquiring(efa="max")
    assert launch_asked(decide(p, observed(), T0)) is not None
    result = failure(CloudError(code, message))
    after = decide(p, replace(observed(), launch=result), T0)
    failed = next(c for c in after.status.conditions if c.type == "Failed")
    return failed.reason, failed.checkState, failed.message


def test_efa_on_a_type_without_efa_is_rejected_naming_type_and_limit() -> None:
    reason, state, message = _rejected(
        "EfaNotSupported", "efa asks for 8 interfaces; p4d.24xlarge supports at most 4"
    )
    assert (reason, state) == ("EfaNotSupported", "Rejected")
    assert "p4d.24xlarge supports at most 4" in message


def test_security_group_without_the_self_rule_is_rejected_naming_the_rule() -> None:
    rule = "inbound: all traffic from sg-0abc itself"
    reason, state, message = _rejected("EfaSecurityGroup", f"security group sg-0abc lacks {rule}")
    assert (reason, state) == ("EfaSecurityGroup", "Rejected")
    assert rule in message
    assert "we never modify it" in message

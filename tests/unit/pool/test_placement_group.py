"""The pool's own placement group: recorded before the launch that makes it, reused
across generations and keep-warm, deleted once the last instance is gone (InUse
retried), before the finalizer; EFA and security-group refusals reject the Job."""

from __future__ import annotations

from typing import Any

from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.aws.acquire import failure
from atomic_gang_provisioner.cloud.errors import CloudError
from atomic_gang_provisioner.cloud.types import ReleaseResult, Shortfall, ZoneAttempt
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.model import with_status
from tests.support.pools import (
    CLAIM,
    IDS,
    KEY,
    KNOBS,
    T0,
    instances,
    launched,
    nodes,
    observed,
    pool,
)
from tests.unit.pool.test_topology import shaped

GROUP = naming.placement_group_name(cluster=KNOBS.cluster, pool="pretrain")


def acquiring(**shape: Any) -> Any:
    return shaped(pool(phase="Acquiring", claimKey=KEY), **shape)


def test_own_group_is_recorded_with_the_launch_that_may_create_it() -> None:
    plan = machine.decide(acquiring(placement="cluster"), observed(), T0)
    assert plan.acquire is not None
    assert plan.acquire.spec.placement == "cluster"
    assert plan.status.placementGroup == GROUP


def test_first_acquisition_writes_the_group_ahead_of_the_launch() -> None:
    p = shaped(pool(), placement="cluster")
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is None  # write-ahead: the name is stored before EC2 sees it
    assert plan.status.placementGroup == GROUP


def test_a_named_group_is_the_users_and_never_recorded() -> None:
    plan = machine.decide(acquiring(placementGroupName="team-pg"), observed(), T0)
    assert plan.acquire is not None
    assert plan.acquire.spec.placement_group_name == "team-pg"
    assert plan.status.placementGroup == ""


def test_no_placement_no_group() -> None:
    plan = machine.decide(acquiring(), observed(), T0)
    assert plan.status.placementGroup == ""


def test_a_group_that_cannot_hold_n_is_a_shortfall() -> None:
    p = acquiring(placement="cluster")
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    ice = Shortfall(
        attempts=(ZoneAttempt(zone="us-east-1a", code="InsufficientInstanceCapacity", message="3"),)
    )
    after = machine.after_acquire(p, plan, request=plan.acquire, result=ice, now=T0, knobs=KNOBS)
    assert after.status.lastErrorReason == "InsufficientCapacity"
    assert after.status.placementGroup == GROUP  # kept for the next attempt
    assert after.status.instanceIds == []


def test_release_between_generations_keeps_the_group() -> None:
    p = shaped(launched(phase="Releasing", placementGroup=GROUP), placement="cluster")
    plan = machine.decide(p, observed(), T0)
    after = machine.after_release(p, plan, result=ReleaseResult(), now=T0, knobs=KNOBS)
    assert after.status.phase == "Acquiring"
    assert after.status.placementGroup == GROUP
    assert after.deletes_group is False


def test_idle_without_claim_deletes_the_group_after_the_last_instance() -> None:
    p = shaped(launched(phase="Releasing", placementGroup=GROUP), placement="cluster")
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})})
    plan = machine.decide(p, observed(), T0)
    after = machine.after_release(p, plan, result=ReleaseResult(), now=T0, knobs=KNOBS)
    assert after.status.phase == "Idle"
    assert after.requeue_after == KNOBS.release_poll  # the next round deletes the group
    idle = machine.decide(with_status(p, after.status), observed(), T0)
    assert idle.deletes_group is True


def test_group_still_in_use_is_asked_again_not_an_error() -> None:
    p = pool(claim=None, placementGroup=GROUP)
    plan = machine.decide(p, observed(), T0)
    assert plan.deletes_group is True
    after = machine.after_delete_group(p, plan, deleted=False, knobs=KNOBS, now=T0)
    assert after.status.placementGroup == GROUP
    assert after.requeue_after == KNOBS.release_poll
    assert after.status.lastErrorReason == ""
    assert after.events == ()


def test_group_deleted_is_forgotten_with_an_event() -> None:
    p = pool(claim=None, placementGroup=GROUP)
    plan = machine.decide(p, observed(), T0)
    after = machine.after_delete_group(p, plan, deleted=True, knobs=KNOBS, now=T0)
    assert after.status.placementGroup == ""
    assert [(e.reason, e.message) for e in after.events] == [
        ("PlacementGroupDeleted", f"Deleted placement group {GROUP}")
    ]
    assert after.remove_finalizer is False
    again = machine.decide(with_status(p, after.status), observed(), T0)
    assert again.deletes_group is False


def test_a_claim_on_an_idle_pool_reuses_its_group() -> None:
    p = shaped(pool(claim=CLAIM, placementGroup=GROUP), placement="cluster")
    plan = machine.decide(p, observed(), T0)
    assert plan.deletes_group is False
    assert plan.status.phase == "Acquiring"


def test_keep_warm_reuse_keeps_group_and_topology() -> None:
    warm = launched(
        phase="KeepWarm",
        claimKey="",
        placementGroup=GROUP,
        networkNodes={i: ["a", "b"] for i in IDS},
        spread=1,
        keepWarmUntil=T0,
    )
    plan = machine.decide(warm, observed(nodes(4), instances()), T0)
    assert plan.status.phase == "Satisfied"
    assert (plan.status.placementGroup, plan.status.spread) == (GROUP, 1)


def test_deleted_pool_deletes_its_group_before_the_finalizer() -> None:
    p = pool(claim=None, deleting=True, placementGroup=GROUP)
    plan = machine.decide(p, observed(), T0)
    assert (plan.deletes_group, plan.remove_finalizer) == (True, False)
    after = machine.after_delete_group(p, plan, deleted=True, knobs=KNOBS, now=T0)
    assert after.remove_finalizer is True


def test_deleted_pool_releasing_keeps_the_finalizer_while_its_group_exists() -> None:
    p = launched(phase="Releasing", placementGroup=GROUP)
    p = p.model_copy(
        update={"metadata": {**p.metadata, "deletionTimestamp": "2026-11-29T12:00:00Z"}}
    )
    plan = machine.decide(p, observed(), T0)
    after = machine.after_release(p, plan, result=ReleaseResult(), now=T0, knobs=KNOBS)
    assert after.remove_finalizer is False
    assert after.requeue_after == KNOBS.release_poll
    final = machine.decide(with_status(p, after.status), observed(), T0)
    assert final.deletes_group is True


def _rejected(code: str, message: str) -> tuple[str, str | None, str]:
    p = acquiring(efa="max")
    plan = machine.decide(p, observed(), T0)
    assert plan.acquire is not None
    result = failure(CloudError(code, message))
    after = machine.after_acquire(p, plan, request=plan.acquire, result=result, now=T0, knobs=KNOBS)
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

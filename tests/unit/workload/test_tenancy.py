"""Pools belong to namespaces: a claimant from another namespace never gets a pool that
holds its owner's instances or claim (Retry, never Rejected, naming nothing of the
owner's), takes it once nothing of the owner is left, and a name the admin lists for
some namespaces is theirs alone, shared among them."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_provisioner.api import Claim, GangNodePool
from tests.support.jobs import gang_job, settings
from tests.support.pools import T0, pool, reported
from tests.unit.workload.test_decide import run, workload

OWNER = "team-a"
POOL_LABEL = gang_job()["metadata"]["labels"]["atomic-gang.k8s.aws/pool"]
CLAIM_A = Claim(namespace=OWNER, name="job-a-1", uid="uid-a", claimedAt=T0)


def in_namespace(namespace: str, **kw: Any) -> dict[str, Any]:
    wl = workload(uid="uid-b", **kw)
    wl["metadata"]["namespace"] = namespace
    return wl


def owned(p: GangNodePool, owner: str | None = OWNER) -> GangNodePool:
    return reported(
        p.model_copy(update={"spec": p.spec.model_copy(update={"ownerNamespace": owner})})
    )


def warm() -> GangNodePool:
    """A KeepWarm set of four, no claim."""
    return pool(claim=None, phase="KeepWarm", instanceIds=["i-1", "i-2", "i-3", "i-4"])


@pytest.mark.parametrize(
    ("p", "claimant"),
    [
        pytest.param(owned(warm()), "absent", id="warm-set-kept-for-its-owner"),
        pytest.param(
            owned(pool(claim=CLAIM_A, phase="Satisfied", instanceIds=["i-1"])),
            "active",
            id="satisfied-for-its-owner",
        ),
        pytest.param(owned(pool(claim=CLAIM_A, phase="Acquiring")), "active", id="owner-acquiring"),
    ],
)
def test_another_namespace_is_refused_with_retry_naming_nothing_of_the_owner(
    p: GangNodePool, claimant: str
) -> None:
    plan = run(in_namespace("team-b"), pool=p, claimant=claimant)
    (update,) = plan.checks
    assert update.state == "Retry"
    assert update.requeue_after_seconds == 30
    assert "belongs to another namespace" in update.message
    for secret in (OWNER, "job-a-1", "i-1", "p4d.24xlarge"):
        assert secret not in update.message
    assert plan.spec_change is None
    assert plan.create_pool is None


def test_a_pool_holding_nothing_and_no_claim_lapses_to_the_next_namespace() -> None:
    p = owned(pool(claim=None, phase="Idle"))
    plan = run(in_namespace("team-b"), pool=p, claimant="absent")
    assert plan.spec_change is not None
    assert plan.spec_change.owner_namespace == "team-b"
    assert plan.spec_change.claim is not None
    assert plan.spec_change.claim.namespace == "team-b"


def test_the_owner_reuses_its_warm_set_and_ownership_stays() -> None:
    plan = run(in_namespace(OWNER), pool=owned(warm()), claimant="absent")
    assert plan.spec_change is not None
    assert plan.spec_change.owner_namespace is None  # nothing to record: already its own
    assert plan.spec_change.claim is not None


def test_a_pool_from_before_ownership_records_its_next_claimant() -> None:
    plan = run(in_namespace("team-b"), pool=owned(warm(), owner=None), claimant="absent")
    assert plan.spec_change is not None
    assert plan.spec_change.owner_namespace == "team-b"


def test_a_new_pool_records_the_creating_namespace() -> None:
    plan = run(in_namespace("team-b"))
    assert plan.create_pool is not None
    assert plan.create_pool.spec.ownerNamespace == "team-b"


LISTED = settings(
    poolNamespaces=[{"names": f"{POOL_LABEL[:4]}*", "namespaces": [OWNER, "team-a2"]}]
)


def test_a_name_the_admin_lists_is_rejected_for_every_other_namespace() -> None:
    for p in (None, owned(pool(claim=None, phase="Idle"))):
        (update,) = run(in_namespace("team-b"), pool=p, settings=LISTED).checks
        assert update.state == "Rejected"
        assert "reserved for other namespaces by the cluster's admin" in update.message
        assert OWNER not in update.message


def test_listed_namespaces_share_the_name_without_learning_each_others_objects() -> None:
    plan = run(in_namespace("team-a2"), pool=owned(warm()), claimant="absent", settings=LISTED)
    assert plan.spec_change is not None  # a warm set handed over within the listed group
    busy = owned(pool(claim=CLAIM_A, phase="Satisfied", instanceIds=["i-1"]))
    (update,) = run(in_namespace("team-a2"), pool=busy, claimant="active", settings=LISTED).checks
    assert update.state == "Retry"
    assert "in use by a Workload of another namespace" in update.message
    assert "job-a-1" not in update.message
    assert OWNER not in update.message


def test_a_shape_conflict_names_values_only_to_the_owner() -> None:
    p = owned(warm())
    (theirs,) = run(
        in_namespace("team-a2"), pool=p, owner=gang_job(count=8), settings=LISTED
    ).checks
    assert theirs.state == "Rejected"
    assert "different shape: count." in theirs.message
    (own,) = run(in_namespace(OWNER), pool=p, owner=gang_job(count=8)).checks
    assert "count (pool 4, this Job 8)" in own.message


def test_a_warm_set_in_a_reservation_is_reused_only_where_that_reservation_is_allowed() -> None:
    held = owned(
        pool(
            claim=None, phase="KeepWarm", instanceIds=["i-1"], reservationId="cr-0aaaaaaaaaaaaaaa1"
        )
    )
    shared = {"names": f"{POOL_LABEL[:4]}*", "namespaces": [OWNER, "team-a2"]}
    limited = settings(
        poolNamespaces=[shared],
        namespaceAllowlists=[
            {"namespaces": ["team-a2"], "allowedCapacityReservationIds": ["cr-0bbbbbbbbbbbbbbb1"]}
        ],
    )
    (update,) = run(in_namespace("team-a2"), pool=held, claimant="absent", settings=limited).checks
    assert update.state == "Retry"
    assert "capacity reservation this namespace may not use" in update.message
    assert "cr-0aaaaaaaaaaaaaaa1" not in update.message
    plan = run(in_namespace(OWNER), pool=held, claimant="absent", settings=limited)
    assert plan.spec_change is not None  # the owner may: no entry limits it

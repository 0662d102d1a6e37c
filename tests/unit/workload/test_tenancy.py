"""Pools belong to namespaces by name: a namespace's pool label names
``<namespace>.<label>``, which no other namespace can reach, whatever the other holds
or claims; a bare-named pool (a name the admin lists for some namespaces, or one from
before names were per namespace) serves only its namespaces, and a pool of another
namespace reached by a collision of long names is Rejected, naming nothing of it."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_provisioner.api import Claim, GangNodePool
from atomic_gang_provisioner.workload import tenancy
from tests.support.jobs import gang_job, settings
from tests.support.pools import T0, pool, reported
from tests.unit.workload.test_decide import S, run, workload

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


def named(
    namespace: str,
    legacy: GangNodePool | None,
    *,
    uid: str = "uid-b",
    label: str = "pretrain",
    listed: Any = None,
) -> str:
    return tenancy.pool_name(
        label,
        namespace=namespace,
        workload_uid=uid,
        settings=listed or S,
        legacy=legacy,
    )


def test_each_namespace_names_its_own_pool_whatever_another_namespace_holds() -> None:
    busy = owned(pool(claim=CLAIM_A, phase="Satisfied", instanceIds=["i-1"]))
    for theirs in (None, owned(warm()), busy, owned(pool(claim=None, phase="Idle"))):
        assert named("team-b", theirs) == "team-b.pretrain"
    assert named("team-a", None) == "team-a.pretrain"


def test_a_bare_named_pool_serves_its_owner_while_it_holds_something() -> None:
    assert named(OWNER, owned(warm())) == "pretrain"  # its warm set is reused
    live = owned(pool(claim=CLAIM_A, phase="Satisfied", instanceIds=["i-1"]))
    assert named(OWNER, live, uid="uid-a") == "pretrain"  # its running gang stays
    assert named(OWNER, owned(pool(claim=None, phase="Idle"))) == "team-a.pretrain"


def test_an_unowned_bare_named_pool_serves_only_the_workload_holding_its_claim() -> None:
    unowned = owned(pool(claim=CLAIM_A, phase="Satisfied", instanceIds=["i-1"]), owner=None)
    assert named("team-b", unowned, uid="uid-a") == "pretrain"  # adopted by its holder
    assert named("team-b", unowned, uid="uid-b") == "team-b.pretrain"
    assert named("team-b", owned(warm(), owner=None)) == "team-b.pretrain"


def test_long_names_keep_within_a_label_value_and_stay_apart() -> None:
    ns, label = "n" * 63, "l" * 63
    first = named(ns, None, label=label)
    other = named(ns[:-1] + "m", None, label=label)
    assert len(first) == len(other) == 63
    assert first != other
    assert first.startswith("n" * 26 + "." + "l" * 25 + "-")


@pytest.mark.parametrize(
    ("p", "claimant"),
    [
        pytest.param(owned(warm()), "absent", id="warm-set-of-another-namespace"),
        pytest.param(
            owned(pool(claim=CLAIM_A, phase="Satisfied", instanceIds=["i-1"])),
            "active",
            id="satisfied-for-another-namespace",
        ),
        pytest.param(owned(pool(claim=None, phase="Idle")), "absent", id="holding-nothing"),
    ],
)
def test_another_namespaces_pool_reached_by_a_collision_is_rejected_naming_nothing(
    p: GangNodePool, claimant: str
) -> None:
    plan = run(in_namespace("team-b"), pool=p, claimant=claimant)
    (update,) = plan.checks
    assert update.state == "Rejected"  # it never lapses to this namespace
    assert "belongs to another namespace" in update.message
    for secret in (OWNER, "job-a-1", "i-1", "p4d.24xlarge"):
        assert secret not in update.message
    assert plan.spec_change is None
    assert plan.create_pool is None


def test_the_owner_reuses_its_warm_set_and_ownership_stays() -> None:
    plan = run(in_namespace(OWNER), pool=owned(warm()), claimant="absent")
    assert plan.spec_change is not None
    assert plan.spec_change.owner_namespace is None  # nothing to record: already its own
    assert plan.spec_change.claim is not None


def test_a_pool_from_before_ownership_is_adopted_by_the_namespace_holding_its_claim() -> None:
    mine = Claim(namespace="team-b", name="job-a-1", uid="uid-b", claimedAt=T0)
    held = owned(pool(claim=mine, phase="Satisfied", instanceIds=["i-1"]), owner=None)
    plan = run(in_namespace("team-b"), pool=held, claimant="absent")
    assert plan.spec_change is not None
    assert plan.spec_change.owner_namespace == "team-b"
    assert plan.spec_change.claim == mine  # the claim stays as it was
    ready = run(in_namespace("team-b", state="Ready"), pool=held, claimant="absent")
    assert ready.spec_change is not None
    assert ready.spec_change.owner_namespace == "team-b"
    settled = owned(held, owner="team-b")
    assert run(in_namespace("team-b", state="Ready"), pool=settled).spec_change is None


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


def test_a_claimant_is_told_its_own_shape_never_what_the_pool_told_the_one_before() -> None:
    """On a name two namespaces share, the next claimant's first message is built from
    its own Job: the previous claimant's Ready words (its nodes, zones) are not its."""
    gang = reported(owned(pool(claim=CLAIM_A, phase="Satisfied", instanceIds=["i-1", "i-2"])))
    before = reported_ready(gang)
    assert before  # the pool did speak to team-a
    left = owned(gang.model_copy(update={"spec": gang.spec.model_copy(update={"claim": None})}))
    plan = run(in_namespace("team-a2"), pool=left, claimant="absent", settings=LISTED)
    (update,) = plan.checks
    assert before not in update.message
    assert "reusing its warm set of 4×p4d.24xlarge" in update.message
    released = owned(pool(claim=None, phase="Idle"))
    plan = run(
        in_namespace("team-a2"),
        pool=released,
        claimant="absent",
        settings=LISTED,
        owner=gang_job(count=8, annotations={"atomic-gang.k8s.aws/availability-zones": None}),
    )
    (update,) = plan.checks
    assert "Acquiring 8×p4d.24xlarge (runinstances, discovered zones)" in update.message
    assert "us-east-1a" not in update.message  # the zone the pool's last shape named


def reported_ready(p: GangNodePool) -> str:
    found = next((c for c in p.status.conditions if c.type == "Ready"), None)
    return found.message if found is not None else ""

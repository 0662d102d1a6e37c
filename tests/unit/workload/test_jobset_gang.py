"""A Workload owned by a JobSet: N over the gang roles, one podSetUpdate per gang
role, the Workload's PodSets held to the JobSet, and the claim sized by the largest
gang pod."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang import keys
from atomic_gang.gang_object import validate
from atomic_gang_provisioner.views.resource_flavor import ResourceFlavor
from atomic_gang_provisioner.workload import podsets
from atomic_gang_provisioner.workload.view import view
from tests.support.jobs import gang_jobset, settings
from tests.unit.workload.test_decide import _claimed_pool, run, workload

JOBSET_OWNER = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "allreduce-jobset",
    "uid": "jobset-uid",
    "controller": True,
}


GPU_POD = {
    "spec": {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
}
CPU_POD = {"spec": {"containers": [{"name": "d"}]}}


def owned_by_jobset(pod_sets: dict[str, int], **kw: Any) -> dict[str, Any]:
    """The Workload Kueue makes for a JobSet: one PodSet per replicatedJob (the driver's
    pods ask for no GPU, every other role's for 8)."""
    wl = workload(**kw)
    wl["metadata"]["ownerReferences"] = [JOBSET_OWNER]
    wl["spec"]["podSets"] = [
        {"name": n, "count": c, "template": CPU_POD if n == "driver" else GPU_POD}
        for n, c in pod_sets.items()
    ]
    return wl


DRIVER_AND_WORKERS = {"driver": 1, "workers": 4}


def test_a_jobset_gang_creates_its_pool_for_the_pods_of_its_gang_roles() -> None:
    plan = run(owned_by_jobset(DRIVER_AND_WORKERS), owner=gang_jobset())
    assert plan.create_pool is not None
    assert plan.create_pool.spec.shape.count == 4
    claim = plan.create_pool.spec.claim
    assert claim is not None
    assert claim.resources == {"nvidia.com/gpu": 8}
    assert claim.owner == "JobSet/allreduce-jobset"  # `kubectl get gnp -o wide` shows it
    (update,) = plan.checks
    assert update.state == "Pending"
    assert "for JobSet/allreduce-jobset; acquiring 4×p4d.24xlarge" in update.message


def test_ready_pins_only_the_gang_roles() -> None:
    p = _claimed_pool(phase="Satisfied", readyCount=4)
    (update,) = run(owned_by_jobset(DRIVER_AND_WORKERS), owner=gang_jobset(), pool=p).checks
    assert update.state == "Ready"
    assert [u["name"] for u in update.pod_set_updates] == ["workers"]
    (workers,) = update.pod_set_updates
    assert workers["nodeSelector"] == {keys.POOL: "pretrain", keys.GROUP: "pretrain-g1"}
    assert workers["tolerations"] == [
        {"key": keys.GANG_TAINT, "operator": "Equal", "value": "pretrain"}
    ]


def test_without_gang_roles_every_replicated_job_is_the_gang() -> None:
    p = _claimed_pool(phase="Satisfied", readyCount=5)
    owner = gang_jobset(count=5, gang_roles=None)
    plan = run(owned_by_jobset(DRIVER_AND_WORKERS), owner=owner, pool=p)
    (update,) = plan.checks
    assert [u["name"] for u in update.pod_set_updates] == ["driver", "workers"]


def test_an_admitted_jobset_keeps_the_pod_set_updates_kueue_admitted_it_with() -> None:
    p = _claimed_pool(phase="Satisfied", readyCount=4)
    wl = owned_by_jobset(DRIVER_AND_WORKERS)
    (ready,) = run(wl, owner=gang_jobset(), pool=p).checks
    admitted = owned_by_jobset(
        DRIVER_AND_WORKERS,
        state="Ready",
        message=ready.message,
        podSetUpdates=list(ready.pod_set_updates),
    )
    # Kueue merged the updates into the template: the JobSet is not judged again.
    merged = gang_jobset()
    pod = merged["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod["nodeSelector"] = ready.pod_set_updates[0]["nodeSelector"]
    assert run(admitted, owner=merged, pool=p).checks == ()


def test_a_jobset_whose_count_differs_from_its_gang_pods_is_rejected_naming_them() -> None:
    """Created while the webhook was down: the provisioner refuses it, launching nothing."""
    plan = run(owned_by_jobset(DRIVER_AND_WORKERS), owner=gang_jobset(count=3))
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "Invalid gang JobSet" in update.message
    assert "CountMismatch" in update.message
    assert "workers: 2 replicas × 2 = 4 pods" in update.message
    assert plan.create_pool is None
    assert plan.spec_change is None


def test_a_workload_whose_gang_pod_sets_differ_from_the_count_is_rejected() -> None:
    plan = run(owned_by_jobset({"driver": 1, "workers": 6}), owner=gang_jobset())
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "CountMismatch: count is 4 but the Workload's gang PodSets hold 6 pods" in (
        update.message
    )
    assert "workers: 6 pods" in update.message
    assert plan.create_pool is None


def test_a_workload_without_a_pod_set_for_a_gang_role_is_rejected_naming_its_pod_sets() -> None:
    plan = run(owned_by_jobset({"driver": 1, "trainers": 4}), owner=gang_jobset())
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "expected a PodSet named 'workers'" in update.message
    assert "driver: 1, trainers: 4" in update.message


def test_a_jobset_without_gang_keys_on_our_queue_is_rejected_as_not_a_gang() -> None:
    bare = gang_jobset()
    bare["metadata"]["annotations"] = {}
    bare["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "gpu"}
    (update,) = run(owned_by_jobset(DRIVER_AND_WORKERS), owner=bare).checks
    assert update.state == "Rejected"
    assert "The JobSet has no atomic-gang annotations" in update.message


@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    st.data(),
)
def test_the_gang_is_the_sum_of_replicas_times_pods_over_the_gang_roles(
    shapes: list[tuple[int, int, int, bool]], data: st.DataObject
) -> None:
    """For any replicatedJobs, the provisioner's N is Σ replicas × min(parallelism,
    completions) over the gang roles, and the Workload Kueue sizes the same way passes."""
    roles = tuple(
        (f"r{i}", replicas, parallelism, gpu)
        for i, (replicas, parallelism, _c, gpu) in enumerate(shapes)
    )
    chosen = data.draw(st.sets(st.sampled_from([r[0] for r in roles]), min_size=1))
    n = sum(r[1] * r[2] for r in roles if r[0] in chosen)
    jobset = gang_jobset(
        count=n, roles=roles, gang_roles=",".join(sorted(chosen)), annotations=None
    )
    gang = validate(jobset, settings())
    assert gang is not None
    assert sorted(gang.roles) == sorted(chosen)
    wl = view(owned_by_jobset({r[0]: r[1] * r[2] for r in roles}))
    assert podsets.mismatch(gang, wl) == ""
    grown = view(owned_by_jobset({r[0]: r[1] * r[2] + 1 for r in roles}))
    assert podsets.mismatch(gang, grown).startswith("CountMismatch")


def _assigned(wl: dict[str, Any], flavors: dict[str, str]) -> dict[str, Any]:
    wl["status"]["admission"] = {
        "podSetAssignments": [{"name": p, "flavors": {"cpu": f}} for p, f in flavors.items()]
    }
    return wl


def test_a_driver_on_a_flavor_that_claims_gang_nodes_is_rejected_naming_both() -> None:
    wl = _assigned(owned_by_jobset(DRIVER_AND_WORKERS), {"driver": "gang", "workers": "gang"})
    plan = run(wl, owner=gang_jobset(), claiming_flavors=frozenset({"gang"}))
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "PodSet driver on ResourceFlavor gang" in update.message
    assert "workers" not in update.message.split(":")[0]
    assert plan.create_pool is None
    # The same flavor under the gang roles alone is fine: only the others are held.
    fine = _assigned(owned_by_jobset(DRIVER_AND_WORKERS), {"driver": "plain", "workers": "gang"})
    assert run(fine, owner=gang_jobset(), claiming_flavors=frozenset({"gang"})).create_pool


@pytest.mark.parametrize(
    ("spec", "claims"),
    [
        ({}, False),
        ({"nodeLabels": {"node.kubernetes.io/instance-type": "p4d.24xlarge"}}, False),
        ({"nodeLabels": {keys.MANAGED: "true"}}, True),
        ({"tolerations": [{"key": keys.GANG_TAINT, "operator": "Exists"}]}, True),
        ({"tolerations": [{"operator": "Exists"}]}, True),
        ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}, False),
    ],
)
def test_which_flavors_claim_gang_nodes(spec: dict[str, Any], claims: bool) -> None:
    assert podsets.flavor_claims_gang_nodes(ResourceFlavor({"spec": spec})) is claims

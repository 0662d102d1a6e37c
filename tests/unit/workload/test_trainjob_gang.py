"""A Workload owned by a TrainJob: the gang is the runtime's trainer PodSet (``node``),
held to ``count`` against the Workload's PodSets (numNodes, or the runtime's default),
one podSetUpdate for it, initializers left to ordinary nodes."""

from __future__ import annotations

from typing import Any

from atomic_gang import keys
from tests.support.jobs import gang_trainjob
from tests.unit.workload.test_decide import _claimed_pool, run, workload

TRAINJOB_OWNER = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "name": "allreduce-trainjob",
    "uid": "trainjob-uid",
    "controller": True,
}
GPU_POD = {
    "spec": {"containers": [{"name": "node", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
}
CPU_POD = {"spec": {"containers": [{"name": "initializer"}]}}


def owned_by_trainjob(pod_sets: dict[str, int], **kw: Any) -> dict[str, Any]:
    """The Workload Kueue makes for a TrainJob: the PodSets of the JobSet its runtime
    builds (the trainer ``node`` asks for 8 GPUs, an initializer for none)."""
    wl = workload(**kw)
    wl["metadata"]["ownerReferences"] = [TRAINJOB_OWNER]
    wl["spec"]["podSets"] = [
        {"name": n, "count": c, "template": GPU_POD if n == "node" else CPU_POD}
        for n, c in pod_sets.items()
    ]
    return wl


def test_a_trainjob_gang_creates_its_pool_for_its_trainer_nodes() -> None:
    plan = run(owned_by_trainjob({"node": 4}), owner=gang_trainjob())
    assert plan.create_pool is not None
    assert plan.create_pool.spec.shape.count == 4
    claim = plan.create_pool.spec.claim
    assert claim is not None
    assert claim.owner == "TrainJob/allreduce-trainjob"
    assert claim.resources == {"nvidia.com/gpu": 8}  # from the Workload's PodSet


def test_ready_pins_the_trainer_nodes_and_leaves_the_initializer_alone() -> None:
    p = _claimed_pool(phase="Satisfied", readyCount=4)
    wl = owned_by_trainjob({"dataset-initializer": 1, "node": 4})
    (update,) = run(wl, owner=gang_trainjob(), pool=p).checks
    assert update.state == "Ready"
    assert [u["name"] for u in update.pod_set_updates] == ["node"]
    assert update.pod_set_updates[0]["nodeSelector"] == {
        keys.POOL: "pretrain",
        keys.GROUP: "pretrain-g1",
    }


def test_num_nodes_left_to_the_runtime_is_held_to_count_by_the_workload() -> None:
    """The webhook cannot read the runtime's default numNodes; the Workload says it."""
    plan = run(owned_by_trainjob({"node": 2}), owner=gang_trainjob(num_nodes=None))
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "CountMismatch: count is 4 but the Workload's gang PodSets hold 2 pods" in (
        update.message
    )
    assert "node: 2 pods" in update.message
    assert plan.create_pool is None
    fits = run(owned_by_trainjob({"node": 4}), owner=gang_trainjob(num_nodes=None))
    assert fits.create_pool is not None


def test_a_count_that_differs_from_num_nodes_is_rejected_with_nothing_launched() -> None:
    """Created while the webhook was down."""
    plan = run(owned_by_trainjob({"node": 4}), owner=gang_trainjob(count=3))
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "Invalid gang TrainJob" in update.message
    assert "CountMismatch" in update.message
    assert plan.create_pool is None
    assert plan.spec_change is None


def test_a_runtime_whose_trainer_is_not_node_needs_gang_roles() -> None:
    plan = run(owned_by_trainjob({"trainer": 4}), owner=gang_trainjob())
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "expected a PodSet named 'node'" in update.message
    assert "the Workload's PodSets: trainer: 4" in update.message
    named = gang_trainjob(annotations={keys.GANG_ROLES: "trainer"})
    assert run(owned_by_trainjob({"trainer": 4}), owner=named).create_pool is not None

"""The Workload reconciler's pure decision, scenario by scenario."""

from __future__ import annotations

from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.api import Claim
from atomic_gang_provisioner.workload import decision
from atomic_gang_provisioner.workload.owners import judge
from atomic_gang_provisioner.workload.plan import Inputs, WorkloadPlan
from atomic_gang_provisioner.workload.view import view
from tests.support.jobs import gang_job, settings
from tests.support.pools import KNOBS, T0, launched, pool, reported

CHECK = "atomic-gang-check"
S = settings()


def workload(
    *,
    state: str = "Pending",
    uid: str = "uid-a",
    conditions: dict[str, str] | None = None,
    active: bool = True,
    message: str = "",
    **check: Any,
) -> dict[str, Any]:
    conds = {"QuotaReserved": "True"} if conditions is None else conditions
    return {
        "metadata": {
            "namespace": "default",
            "name": "job-a-1",
            "uid": uid,
            "resourceVersion": "5",
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "allreduce-pretrain",
                    "uid": "job-uid",
                }
            ],
        },
        "spec": {"active": active, "podSets": [{"name": "main", "count": 4}]},
        "status": {
            "conditions": [{"type": t, "status": v} for t, v in conds.items()],
            "admissionChecks": [
                {
                    "name": CHECK,
                    "state": state,
                    "message": message,
                    "lastTransitionTime": "2026-11-29T11:00:00Z",
                    **check,
                }
            ],
        },
    }


def sized(wl: dict[str, Any], owner: dict[str, Any] | None) -> dict[str, Any]:
    """The Workload as Kueue makes it from its owner Job: one PodSet "main" of
    ``parallelism`` pods with the Job's pod template (the fixture's own PodSets when
    there is no Job to size from)."""
    spec = (owner or {}).get("spec") or {}
    parallelism = spec.get("parallelism")
    if owner is None or owner.get("kind", "Job") != "Job" or parallelism is None:
        return wl
    main = {"name": "main", "count": parallelism, "template": spec.get("template") or {}}
    return {**wl, "spec": {**wl["spec"], "podSets": [main]}}


def run(wl: dict[str, Any] | None = None, **kw: Any) -> WorkloadPlan:
    owner = kw.get("owner", gang_job())
    base: dict[str, Any] = {
        "wl": view(sized(wl or workload(), owner)),
        "our_checks": frozenset({CHECK}),
        "owner": gang_job(),
        "pool": None,
        "settings": S,
        "now": T0,
        "failed_retry_seconds": int(KNOBS.backoff_max),
    }
    base.update(kw)
    if (
        base["owner"] is not None
    ):  # judged as the reconciler judges it: once, with its namespace's allowlists
        base["owner"] = judge(base["owner"], base["settings"].for_namespace(base["wl"].namespace))
    return decision.decide(Inputs(**base))


CLAIM_A = Claim(namespace="default", name="job-a-1", uid="uid-a", claimedAt=T0)


def _claimed_pool(**status: Any) -> Any:
    p = launched(**status)
    return reported(
        p.model_copy(
            update={
                "spec": p.spec.model_copy(update={"claim": CLAIM_A}),
                "status": p.status.model_copy(
                    update={"claimKey": CLAIM_A.key, "observedGeneration": 1}
                ),
            }
        )
    )


def test_first_claim_creates_the_pool_with_a_finalizer() -> None:
    plan = run()
    assert plan.create_pool is not None
    created = plan.create_pool
    assert created.name == "default.pretrain-p4d"  # the label, in its namespace
    assert created.metadata["finalizers"] == ["atomic-gang.k8s.aws/release-instances"]
    assert created.spec.claim is not None
    assert created.spec.claim.uid == "uid-a"
    assert created.spec.shape.count == 4
    assert created.spec.keepWarmTTL == "15m0s"
    assert [c.state for c in plan.checks] == ["Pending"]
    assert "nothing billed" in plan.checks[0].message


def test_the_claim_carries_what_one_pod_asks_of_a_node() -> None:
    """The pool counts a Node toward the gang once its allocatable holds these."""
    pod = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "trainer",
                "image": "trainer:latest",
                "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"}},
            }
        ],
    }
    plan = run(owner=gang_job(spec={"template": {"spec": pod}}))
    assert plan.create_pool is not None
    assert plan.create_pool.spec.claim is not None
    wants = plan.create_pool.spec.claim.resources
    assert wants == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4}
    free = reported(pool(claim=None, phase="KeepWarm", instanceIds=["i-1"]))
    taken = run(pool=free, owner=gang_job()).spec_change
    assert taken is not None
    assert taken.claim is not None
    assert taken.claim.resources == {}  # this Job's pods ask for no device


def test_no_check_of_ours_does_nothing() -> None:
    assert run(our_checks=frozenset({"other"})) == WorkloadPlan()


def test_without_quota_the_claim_is_released() -> None:
    p = _claimed_pool(phase="Satisfied")
    plan = run(workload(conditions={"QuotaReserved": "False"}), pool=p)
    assert plan.spec_change is not None
    assert plan.spec_change.claim is None
    assert plan.checks == ()


def test_finished_and_evicted_and_inactive_release() -> None:
    p = _claimed_pool(phase="Satisfied")
    for wl in (
        workload(conditions={"QuotaReserved": "True", "Finished": "True"}),
        workload(conditions={"QuotaReserved": "True", "Evicted": "True"}),
        workload(active=False),
    ):
        plan = run(wl, pool=p)
        assert plan.spec_change is not None
        assert plan.spec_change.claim is None
        assert plan.checks == ()


def test_invalid_job_is_rejected_naming_the_problem() -> None:
    plan = run(owner=gang_job(annotations={keys.MODE: "spot"}))
    assert [c.state for c in plan.checks] == ["Rejected"]
    assert keys.MODE in plan.checks[0].message
    assert plan.events[0][1] == "GangRejected"


def test_job_without_gang_annotations_is_rejected() -> None:
    job = gang_job(labels={keys.POOL: None}, annotations=dict.fromkeys(keys.ANNOTATION_KEYS))
    plan = run(owner=job)
    assert plan.checks[0].state == "Rejected"
    assert "no atomic-gang annotations" in plan.checks[0].message


def test_satisfied_pool_makes_the_check_ready_with_pod_set_updates() -> None:
    p = _claimed_pool(phase="Satisfied", readyCount=4)
    plan = run(pool=p)
    (update,) = plan.checks
    assert update.state == "Ready"
    assert update.pod_set_updates == (
        {
            "name": "main",
            "nodeSelector": {keys.POOL: "pretrain", keys.GROUP: "pretrain-g1"},
            "tolerations": [
                # No effect: it matches NoExecute gang nodes and NoSchedule ones from before.
                {"key": keys.GANG_TAINT, "operator": "Equal", "value": "pretrain"}
            ],
        },
    )
    assert update.last_transition_time == "2026-11-29T12:00:00Z"


def test_stale_status_is_not_ready() -> None:
    p = _claimed_pool(phase="Satisfied", readyCount=4)
    stale = p.model_copy(update={"metadata": {**p.metadata, "generation": 2}})
    assert run(pool=stale).checks[0].state == "Pending"


def test_n_minus_one_ready_stays_pending() -> None:
    plan = run(pool=_claimed_pool(phase="Joining", readyCount=3))
    assert plan.checks[0].state == "Pending"
    assert "3/4 nodes Ready" in plan.checks[0].message


def test_unchanged_state_writes_nothing() -> None:
    p = _claimed_pool(phase="Joining", readyCount=3)
    first = run(pool=p)
    msg = first.checks[0].message
    assert run(workload(message=msg), pool=p) == WorkloadPlan()


def test_shortfall_message_tells_where_things_stand() -> None:
    p = _claimed_pool(
        phase="Acquiring",
        instanceIds=[],
        consecutiveShortfalls=2,
        lastErrorReason="InsufficientCapacity",
        lastError="insufficient capacity (us-east-1a: InsufficientInstanceCapacity)",
    )
    msg = run(pool=p).checks[0].message
    assert msg.startswith("Acquiring 4×p4d.24xlarge (runinstances, us-east-1a) (attempt 2/3)")
    assert "InsufficientInstanceCapacity" in msg
    assert "nothing billed" in msg


def test_k_shortfalls_turn_into_retry() -> None:
    p = _claimed_pool(
        phase="Acquiring",
        instanceIds=[],
        consecutiveShortfalls=3,
        lastErrorReason="InsufficientCapacity",
        lastError="no capacity",
    )
    (update,) = run(pool=p).checks
    assert update.state == "Retry"
    assert update.requeue_after_seconds == 60
    assert "3 consecutive" in update.message


def test_an_unauthorized_node_role_turns_into_retry_with_the_fix() -> None:
    fix = "aws eks create-access-entry --cluster-name c --principal-arn r --type EC2_LINUX"
    p = _claimed_pool(
        phase="Acquiring",
        instanceIds=[],
        consecutiveShortfalls=1,
        lastErrorReason="NodeRoleNotAuthorized",
        lastError=f"NodeRoleNotAuthorized: node role r may not join cluster c. Fix: {fix}",
    )
    (update,) = run(pool=p).checks
    assert update.state == "Retry"
    assert fix in update.message
    assert "Retrying will not help until this is fixed" in update.message


def test_a_subnet_outside_the_cluster_vpc_rejects_the_workload() -> None:
    p = _claimed_pool(
        phase="Acquiring",
        instanceIds=[],
        consecutiveShortfalls=1,
        lastErrorReason="InvalidSubnet",
        lastError="SubnetNotInCluster: subnet s is in vpc-x, not in cluster c's VPC vpc-y",
    )
    (update,) = run(pool=p).checks
    assert update.state == "Rejected"
    assert "subnet s is in vpc-x" in update.message


def test_second_claimant_gets_retry() -> None:
    p = _claimed_pool(phase="Satisfied")
    plan = run(workload(uid="uid-b"), pool=p, claimant="active")
    (update,) = plan.checks
    assert update.state == "Retry"
    assert update.requeue_after_seconds == 30
    assert "in use by Workload default/job-a-1" in update.message
    assert plan.spec_change is None


def test_claim_of_a_vanished_workload_is_taken_over() -> None:
    p = _claimed_pool(phase="KeepWarm")
    plan = run(workload(uid="uid-b"), pool=p, claimant="absent")
    assert plan.spec_change is not None
    assert plan.spec_change.claim is not None
    assert plan.spec_change.claim.uid == "uid-b"
    assert plan.spec_change.resource_version == "7"


def test_shape_conflict_is_rejected() -> None:
    p = reported(pool(claim=None, phase="KeepWarm", instanceIds=["i-1"]))
    job = gang_job(count=8)
    plan = run(pool=p, owner=job)
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "count (pool 4, this Job 8)" in update.message


def test_free_pool_with_same_shape_is_claimed_with_this_jobs_ttl() -> None:
    p = reported(pool(claim=None, phase="KeepWarm", instanceIds=["i-1"]))
    plan = run(pool=p, owner=gang_job(annotations={keys.KEEP_WARM_TTL: "1h"}))
    assert plan.spec_change is not None
    assert plan.spec_change.keep_warm_ttl == "1h0m0s"
    assert plan.spec_change.shape is None
    assert plan.spec_change.claim is not None
    assert plan.spec_change.claim.claimedAt == T0
    assert [e[1] for e in plan.events] == ["PoolClaimed"]


def test_empty_idle_pool_takes_the_new_shape() -> None:
    p = reported(pool(claim=None, phase="Idle"))
    plan = run(pool=p, owner=gang_job(count=8))
    assert plan.spec_change is not None
    assert plan.spec_change.shape is not None
    assert plan.spec_change.shape.count == 8


def test_degraded_claimant_gets_retry() -> None:
    p = _claimed_pool(
        phase="Degraded",
        degradedClaimKey=CLAIM_A.key,
        lastErrorReason="InstanceLost",
        lastError="i-1 terminated",
    )
    (update,) = run(workload(state="Ready"), pool=p).checks
    assert update.state == "Retry"
    assert "InstanceLost" in update.message


def test_ready_is_never_downgraded_to_pending() -> None:
    p = _claimed_pool(phase="Joining", readyCount=3)
    assert run(workload(state="Ready"), pool=p) == WorkloadPlan()


def test_retry_and_rejected_are_left_to_kueue() -> None:
    p = _claimed_pool(phase="Satisfied")
    assert run(workload(state="Retry"), pool=p) == WorkloadPlan()
    assert run(workload(state="Rejected"), pool=p) == WorkloadPlan()


def test_flavor_label_collision_is_rejected() -> None:
    p = _claimed_pool(phase="Satisfied", readyCount=4)
    plan = run(pool=p, flavor_labels={keys.GROUP: "x"})
    assert plan.checks[0].state == "Rejected"
    assert keys.GROUP in plan.checks[0].message


def test_pool_being_deleted_waits() -> None:
    p = pool(deleting=True)
    plan = run(pool=p)
    assert plan.checks[0].state == "Pending"
    assert plan.create_pool is None


def test_admitted_job_with_our_selector_is_not_revalidated() -> None:
    """Kueue merges our podSetUpdates into the template on admission: still fine."""
    p = _claimed_pool(phase="Satisfied", readyCount=4)
    job = gang_job(
        spec={
            "template": {
                "spec": {"nodeSelector": {keys.POOL: "pretrain", keys.GROUP: "pretrain-g1"}}
            }
        }
    )
    ready = run(pool=p).checks[0]
    admitted = workload(
        state="Ready", message=ready.message, podSetUpdates=list(ready.pod_set_updates)
    )
    assert run(admitted, pool=p, owner=job) == WorkloadPlan()


def test_shape_conflict_beats_busy() -> None:
    p = _claimed_pool(phase="Joining")
    plan = run(workload(uid="uid-b"), pool=p, claimant="active", owner=gang_job(count=8))
    assert plan.checks[0].state == "Rejected"

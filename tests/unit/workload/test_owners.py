"""Workloads we can never serve are Rejected at once (Kueue then frees their quota);
an owner Job that cannot be read is waited for only up to ownerWaitSeconds; elastic
Workloads are refused; a requeued Workload's messages say which attempt it is; and no
apply is sent for nothing after Kueue kept requeueAfterSeconds on its reset."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.timestamps import rfc3339
from tests.support.jobs import gang_job, settings
from tests.support.pools import T0
from tests.unit.workload.test_decide import _claimed_pool, run, workload

JOB_OWNER = {"apiVersion": "batch/v1", "kind": "Job", "name": "allreduce-pretrain", "uid": "j"}


def owned_by(*refs: dict[str, Any], **kw: Any) -> dict[str, Any]:
    wl = workload(**kw)
    wl["metadata"]["ownerReferences"] = list(refs)
    return wl


@pytest.mark.parametrize(
    ("refs", "said"),
    [
        pytest.param((), "has no owner", id="bare-workload"),
        pytest.param(
            (
                {
                    "apiVersion": "leaderworkerset.x-k8s.io/v1",
                    "kind": "LeaderWorkerSet",
                    "name": "lws",
                    "uid": "u",
                    "controller": True,
                },
            ),
            "not of a LeaderWorkerSet.leaderworkerset.x-k8s.io",
            id="leaderworkerset",
        ),
        pytest.param(
            ({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": True},),
            "not of a Pod",
            id="pod-group",
        ),
        pytest.param(
            (
                {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"},
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayJob",
                    "name": "rj",
                    "uid": "u2",
                    "controller": True,
                },
            ),
            "owned by RayJob.ray.io 'rj'",
            id="controller-reference-wins",
        ),
    ],
)
def test_an_owner_we_do_not_serve_is_rejected_at_once_naming_kind_and_served(
    refs: tuple[dict[str, Any], ...], said: str
) -> None:
    plan = run(owned_by(*refs), owner=None)
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert said in update.message
    assert "batch/v1 Job" in update.message  # the kind we serve
    assert "frees its quota" in update.message
    assert plan.create_pool is None
    assert plan.spec_change is None


def test_an_owner_job_read_and_not_there_is_rejected_at_once() -> None:
    plan = run(owned_by(JOB_OWNER), owner=None, owner_error="")
    (update,) = plan.checks
    assert update.state == "Rejected"
    assert "Job.batch 'allreduce-pretrain', no longer exists" in update.message


def test_an_unreadable_owner_job_is_awaited_then_rejected_after_owner_wait_seconds() -> None:
    s = settings(ownerWaitSeconds=60)
    since = rfc3339(T0)
    wl = owned_by(JOB_OWNER, lastTransitionTime=since)
    err = "TransportError: connection reset"

    early = run(wl, owner=None, owner_error=err, settings=s, now=T0 + timedelta(seconds=20))
    (waiting,) = early.checks
    assert waiting.state == "Pending"
    assert "rejected if it is not within 60s" in waiting.message
    assert early.requeue_after == 5.0

    late = run(wl, owner=None, owner_error=err, settings=s, now=T0 + timedelta(seconds=58))
    assert late.requeue_after == pytest.approx(2.0)  # wakes at the bound, not after it

    done = run(wl, owner=None, owner_error=err, settings=s, now=T0 + timedelta(seconds=60))
    (rejected,) = done.checks
    assert rejected.state == "Rejected"
    assert "could not be read for 60s (ownerWaitSeconds): TransportError" in rejected.message


def test_a_job_found_by_kueues_label_is_served_without_an_owner_reference() -> None:
    plan = run(owned_by(), owner=gang_job())
    assert plan.create_pool is not None
    assert plan.checks[0].state == "Pending"


def test_an_elastic_workload_is_rejected_saying_why() -> None:
    wl = workload()
    wl["metadata"]["annotations"] = {keys.ELASTIC_JOB: "true"}
    (update,) = run(wl).checks
    assert update.state == "Rejected"
    assert "elastic" in update.message
    assert "cannot follow a Job that grows" in update.message


def test_the_elastic_annotation_on_the_job_is_rejected_as_an_invalid_gang() -> None:
    job = gang_job(annotations={keys.ELASTIC_JOB: "true"})
    (update,) = run(owner=job).checks
    assert update.state == "Rejected"
    assert "[ElasticGang]" in update.message


def test_a_requeued_workload_says_which_attempt_it_is() -> None:
    (update,) = run(workload(retryCount=2)).checks
    assert update.state == "Pending"
    assert update.message.endswith("(attempt 3 after 2 evictions)")
    (first,) = run(workload(retryCount=1)).checks
    assert first.message.endswith("(attempt 2 after 1 eviction)")
    (fresh,) = run(workload()).checks
    assert "attempt" not in fresh.message


def test_ready_after_a_requeue_says_the_attempt_too() -> None:
    pool = _claimed_pool(phase="Satisfied", readyCount=4)
    (update,) = run(workload(retryCount=1), pool=pool).checks
    assert update.state == "Ready"
    assert update.message.endswith("(attempt 2 after 1 eviction)")


def test_no_apply_for_nothing_once_kueue_kept_requeue_after_seconds() -> None:
    """Kueue's reset to Pending keeps requeueAfterSeconds (its field manager co-owns
    it): an entry that differs from ours only there is not sent again."""
    pool = _claimed_pool(phase="Joining", readyCount=2)
    (update,) = run(workload(retryCount=1), pool=pool).checks
    assert update.state == "Pending"
    kept = workload(message=update.message, retryCount=1, requeueAfterSeconds=30)
    assert run(kept, pool=pool).checks == ()

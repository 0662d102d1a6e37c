"""Finding the owner Job when the jobs cache (pool-labelled Jobs only) misses it:
a Job without the pool label queued to our check is fetched once and Rejected,
instead of being awaited forever."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from atomic_gang import keys
from atomic_gang.resources import JOBS, WORKLOADS
from atomic_gang_provisioner.kube.api_errors import NotFoundError, TransportError
from atomic_gang_provisioner.reconcilers.workloads import WorkloadReconciler
from atomic_gang_provisioner.views.owner import JOB_UID_INDEX, job_uid_index
from atomic_gang_provisioner.views.pool_object import CLAIM_INDEX, claim_index
from atomic_gang_provisioner.workload.view import JOB_UID_LABEL
from tests.support.jobs import plain_job, settings
from tests.support.kubefakes import FakeCache, RecordingEvents, RecordingTransport, context

S = settings()
CHECK = "atomic-gang-check"
KEY = "default/job-plain-1"
JOB_PATH = JOBS.path(namespace="default", name="plain")
STATUS_PATH = WORKLOADS.path(namespace="default", name="job-plain-1", subresource="status")


class Answering(RecordingTransport):
    """Answers GETs from ``objects`` (404 otherwise); echoes writes."""

    def __init__(self, objects: dict[str, Any]) -> None:
        super().__init__()
        self.objects = objects

    def request(self, method: str, path: str, **kw: Any) -> Any:
        body = super().request(method, path, **kw)
        if method != "GET":
            return body
        if path not in self.objects:
            raise NotFoundError(path)
        return self.objects[path]


def workload(*, state: str = "Pending", quota: bool = True) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "default",
            "name": "job-plain-1",
            "uid": "uid-w",
            "resourceVersion": "5",
            "labels": {JOB_UID_LABEL: "job-uid"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "plain", "uid": "job-uid"}
            ],
        },
        "spec": {"podSets": [{"name": "main", "count": 1}]},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True" if quota else "False"}],
            "admissionChecks": [
                {"name": CHECK, "state": state, "message": "", "lastTransitionTime": ""}
            ],
        },
    }


def unlabelled_job(uid: str = "job-uid") -> dict[str, Any]:
    job = plain_job()
    job["metadata"]["uid"] = uid
    job["metadata"]["labels"] = {keys.QUEUE_NAME_LABEL: "atomic-gang-queue"}
    return job


def run(t: Answering, wl: dict[str, Any]) -> RecordingEvents:
    events = RecordingEvents()
    ctx = context(
        settings=S,
        transport=t,
        events=events,
        workloads=FakeCache([wl]),
        checks=FakeCache(
            [{"metadata": {"name": CHECK}, "spec": {"controllerName": S.controller_name}}]
        ),
    )
    # Empty caches (an empty FakeCache is falsy, so context() would drop the indexers):
    # the label-selected jobs cache misses the unlabelled Job, and there is no pool.
    ctx = replace(
        ctx,
        jobs=FakeCache([], {JOB_UID_INDEX: job_uid_index}),
        pools=FakeCache([], {CLAIM_INDEX: claim_index}),
    )
    WorkloadReconciler(ctx).reconcile(KEY)
    return events


def applied(t: Answering) -> dict[str, Any]:
    [sent] = [s for s in t.writes() if s.path == STATUS_PATH]
    entry: dict[str, Any] = sent.body["status"]["admissionChecks"][0]
    return entry


def test_a_job_without_the_pool_label_is_fetched_and_rejected() -> None:
    t = Answering({JOB_PATH: unlabelled_job()})
    events = run(t, workload())
    entry = applied(t)
    assert entry["state"] == "Rejected"
    assert "no atomic-gang annotations or pool label" in entry["message"]
    assert keys.POOL in entry["message"]
    assert [(name, reason) for name, reason, _ in events.seen] == [
        ("job-plain-1", "GangRejected"),
        ("plain", "GangRejected"),  # on the Job too: that is what the user describes
    ]


def test_a_new_job_under_the_owner_name_is_not_the_owner() -> None:
    t = Answering({JOB_PATH: unlabelled_job(uid="another-uid")})
    run(t, workload())
    entry = applied(t)
    assert entry["state"] == "Rejected"
    assert "Job.batch 'plain', no longer exists" in entry["message"]


def test_a_job_gone_from_the_apiserver_is_rejected_in_one_reconcile() -> None:
    t = Answering({})
    run(t, workload())
    assert [s.method for s in t.sent] == ["GET", "PATCH"]
    assert applied(t)["state"] == "Rejected"


def test_an_owner_job_that_cannot_be_read_is_waited_for_naming_the_error() -> None:
    t = Answering({JOB_PATH: unlabelled_job()})
    t.errors[("GET", JOB_PATH)] = TransportError("connection reset by peer")
    run(t, workload())
    entry = applied(t)
    assert entry["state"] == "Pending"
    assert "Waiting for Job.batch 'plain' to be readable" in entry["message"]


def test_no_get_once_our_check_is_decided_or_the_workload_is_out_of_play() -> None:
    for wl in (workload(state="Rejected"), workload(quota=False)):
        t = Answering({JOB_PATH: unlabelled_job()})
        run(t, wl)
        assert [s for s in t.sent if s.method == "GET"] == []
        assert t.writes() == []

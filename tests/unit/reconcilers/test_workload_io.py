"""The Workload reconciler's I/O, checked on the wire under the real KubeClient:
finding the Job by the job-uid label, the server-side apply of our check state,
and the release of a deleted Workload's claim."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang.resources import POOLS, WORKLOADS
from atomic_gang_provisioner.kube.api_errors import ConflictError, NotFoundError
from atomic_gang_provisioner.reconcilers.context import NotLeaderError
from atomic_gang_provisioner.reconcilers.workloads import WorkloadReconciler
from atomic_gang_provisioner.views.owner import JOB_UID_INDEX, job_uid_index
from atomic_gang_provisioner.views.pool_object import CLAIM_INDEX, claim_index
from atomic_gang_provisioner.workload.view import JOB_UID_LABEL
from tests.support.jobs import gang_job, settings
from tests.support.kubefakes import FakeCache, RecordingTransport, Sent, context
from tests.support.pools import CLAIM, pool

S = settings()
CHECK = "atomic-gang-check"
OTHER = "someone-elses-check"
KEY = "default/job-a-1"
POOL_PATH = POOLS.path(name="pretrain-p4d")
STATUS_PATH = WORKLOADS.path(namespace="default", name="job-a-1", subresource="status")


def workload(*, labels: dict[str, str] | None = None, owned: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "namespace": "default",
        "name": "job-a-1",
        "uid": "uid-a",
        "resourceVersion": "41",
        "labels": {JOB_UID_LABEL: "job-uid"} if labels is None else labels,
    }
    if owned:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "allreduce-pretrain",
                "uid": "job-uid",
            }
        ]
    return {
        "metadata": meta,
        "spec": {"podSets": [{"name": "main", "count": 4}]},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
            "admissionChecks": [
                {"name": CHECK, "state": "Pending", "message": "", "lastTransitionTime": ""},
                {"name": OTHER, "state": "Pending", "message": "theirs", "lastTransitionTime": ""},
            ],
        },
    }


def job(uid: str = "job-uid") -> dict[str, Any]:
    j = gang_job()
    j["metadata"]["uid"] = uid
    return j


def checks() -> FakeCache:
    return FakeCache(
        [
            {"metadata": {"name": CHECK}, "spec": {"controllerName": S.controller_name}},
            {"metadata": {"name": OTHER}, "spec": {"controllerName": "example.com/other"}},
        ]
    )


def reconciler(
    transport: RecordingTransport,
    *,
    workloads: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    pools: list[dict[str, Any]] | None = None,
    leading: bool = True,
) -> WorkloadReconciler:
    ctx = context(
        settings=S,
        transport=transport,
        workloads=FakeCache(workloads),
        jobs=FakeCache(jobs, {JOB_UID_INDEX: job_uid_index}),
        pools=FakeCache(pools or [], {CLAIM_INDEX: claim_index}),
        checks=checks(),
        leading=lambda: leading,
    )
    return WorkloadReconciler(ctx)


def the_apply(t: RecordingTransport) -> Sent:
    applies = [s for s in t.writes() if s.path == STATUS_PATH]
    assert len(applies) == 1, t.sent
    return applies[0]


# -- finding the Job ---------------------------------------------------------------
def test_job_is_found_by_the_job_uid_label_without_owner_references() -> None:
    t = RecordingTransport()
    reconciler(t, workloads=[workload()], jobs=[job()]).reconcile(KEY)
    created = [s for s in t.writes() if s.method == "POST"]
    assert [s.path for s in created] == [POOLS.path()]
    assert created[0].body["metadata"]["name"] == "default.pretrain-p4d"  # its pool label
    assert created[0].body["spec"]["claim"]["uid"] == "uid-a"
    assert "nothing billed" in the_apply(t).body["status"]["admissionChecks"][0]["message"]


def test_a_job_uid_label_naming_another_job_finds_nothing() -> None:
    t = RecordingTransport()
    reconciler(t, workloads=[workload()], jobs=[job(uid="someone-else")]).reconcile(KEY)
    assert [s.method for s in t.writes()] == ["PATCH"]  # no pool is created
    entry = the_apply(t).body["status"]["admissionChecks"][0]
    assert entry["state"] == "Rejected"  # no owner reference, and the label finds no Job
    assert "has no owner" in entry["message"]


def test_a_job_uid_label_naming_another_namespaces_job_finds_nothing() -> None:
    """A Workload crafted in one namespace with another team's Job UID in Kueue's label
    must not pair with that Job (nor launch its gang)."""
    t = RecordingTransport()
    theirs = job()
    theirs["metadata"]["namespace"] = "team-a"
    reconciler(t, workloads=[workload()], jobs=[theirs]).reconcile(KEY)
    assert [s.method for s in t.writes()] == ["PATCH"]  # no pool created, only the check
    entry = the_apply(t).body["status"]["admissionChecks"][0]
    assert entry["state"] == "Rejected"
    assert "team-a" not in entry["message"]


def test_owner_reference_wins_over_the_label() -> None:
    t = RecordingTransport()
    wl = workload(labels={JOB_UID_LABEL: "stale-uid"}, owned=True)
    reconciler(t, workloads=[wl], jobs=[job()]).reconcile(KEY)
    assert [s.path for s in t.writes() if s.method == "POST"] == [POOLS.path()]


# -- server-side apply of our check state --------------------------------------------
def test_check_state_is_server_side_applied_on_status_as_our_controller() -> None:
    t = RecordingTransport()
    reconciler(t, workloads=[workload()], jobs=[job()]).reconcile(KEY)
    sent = the_apply(t)
    assert sent.method == "PATCH"
    assert sent.content_type == "application/apply-patch+yaml"
    assert ("fieldManager", "atomic-gang.k8s.aws/ec2-atomic") in sent.query
    assert S.controller_name == "atomic-gang.k8s.aws/ec2-atomic"
    assert sent.body["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert sent.body["kind"] == "Workload"
    assert sent.body["metadata"] == {
        "name": "job-a-1",
        "namespace": "default",
        "resourceVersion": "41",
    }
    assert list(sent.body) == ["apiVersion", "kind", "metadata", "status"]
    assert list(sent.body["status"]) == ["admissionChecks"]
    [entry] = sent.body["status"]["admissionChecks"]  # ours only, never OTHER's
    assert entry["name"] == CHECK
    assert entry["state"] == "Pending"
    assert entry["lastTransitionTime"]


def test_the_pool_is_claimed_before_the_check_is_written() -> None:
    t = RecordingTransport()
    reconciler(t, workloads=[workload()], jobs=[job()]).reconcile(KEY)
    assert [(s.method, s.path) for s in t.writes()] == [
        ("POST", POOLS.path()),
        ("PATCH", STATUS_PATH),
    ]


def test_a_conflicting_apply_requeues() -> None:
    t = RecordingTransport()
    t.errors[("PATCH", STATUS_PATH)] = ConflictError("the object has been modified")
    result = reconciler(t, workloads=[workload()], jobs=[job()]).reconcile(KEY)
    assert result.requeue


class ApplyAnswers(RecordingTransport):
    """Answers our apply as the apiserver does: the whole Workload at a new version."""

    def __init__(self, stored: dict[str, Any]) -> None:
        super().__init__()
        self.stored = stored

    def request(self, method: str, path: str, **kw: Any) -> Any:
        body = super().request(method, path, **kw)
        if (method, path) != ("PATCH", STATUS_PATH):
            return body
        rv = str(int(self.stored["metadata"]["resourceVersion"]) + 1)
        meta = {**self.stored["metadata"], "resourceVersion": rv}
        self.stored = {**self.stored, "metadata": meta}
        return self.stored


def test_the_next_apply_builds_on_our_last_one_before_the_watch_brings_it() -> None:
    """The cache still holds version 41 when the pool moves again: applying at 41 would
    be a sure conflict (and a backoff); the apply answered 42, so the next one says 42."""
    t = ApplyAnswers(workload())
    r = reconciler(t, workloads=[workload()], jobs=[job()])
    r.reconcile(KEY)
    r.reconcile(KEY)
    applies = [s for s in t.writes() if s.path == STATUS_PATH]
    assert [a.body["metadata"]["resourceVersion"] for a in applies] == ["41", "42"]


# -- a deleted Workload releases its claim ---------------------------------------------
def claimed_pools() -> list[dict[str, Any]]:
    mine = pool(claim=CLAIM).to_dict()  # "pretrain", claimed by default/job-a-1
    theirs = pool(claim=CLAIM.model_copy(update={"name": "job-b-1", "uid": "uid-b"})).to_dict()
    theirs["metadata"]["name"] = "other-pool"
    return [mine, theirs]


def test_deleted_workload_releases_its_claim_only() -> None:
    t = RecordingTransport()
    reconciler(t, workloads=[], jobs=[], pools=claimed_pools()).reconcile(KEY)
    [sent] = t.writes()
    assert (sent.method, sent.path) == ("PATCH", POOLS.path(name="pretrain"))
    assert sent.content_type == "application/merge-patch+json"
    assert sent.body == {"spec": {"claim": None}, "metadata": {"resourceVersion": "7"}}


def test_release_of_a_vanished_pool_is_not_an_error() -> None:
    t = RecordingTransport()
    t.errors[("PATCH", POOLS.path(name="pretrain"))] = NotFoundError("gone")
    result = reconciler(t, workloads=[], jobs=[], pools=claimed_pools()).reconcile(KEY)
    assert not result.requeue
    assert len(t.writes()) == 1


def test_a_deleted_workload_without_a_claim_writes_nothing() -> None:
    t = RecordingTransport()
    reconciler(t, workloads=[], jobs=[], pools=claimed_pools()).reconcile("default/unknown")
    assert t.writes() == []


def test_a_follower_never_releases() -> None:
    t = RecordingTransport()
    rec = reconciler(t, workloads=[], jobs=[], pools=claimed_pools(), leading=False)
    with pytest.raises(NotLeaderError):
        rec.reconcile(KEY)
    assert t.writes() == []

"""Each gang owner and each ResourceFlavor is judged once per version: a Workload
reconcile whose owner has not changed parses and validates nothing of it."""

from __future__ import annotations

from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.reconcilers.workloads import WorkloadReconciler
from atomic_gang_provisioner.views.owner import JOB_UID_INDEX, job_uid_index
from atomic_gang_provisioner.views.pool_object import CLAIM_INDEX, claim_index
from atomic_gang_provisioner.workload.judgments import Judgments
from atomic_gang_provisioner.workload.owners import judge
from tests.support.jobs import gang_job, settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.unit.reconcilers.test_workload_io import KEY, checks, job, workload

S = settings()


def versioned(obj: dict[str, Any], uid: str, rv: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "uid": uid, "resourceVersion": rv}}


def counting() -> tuple[Judgments[str], list[str]]:
    judged: list[str] = []

    def verdict(obj: Any) -> str:
        judged.append(obj["metadata"]["resourceVersion"])
        return f"verdict at {obj['metadata']['resourceVersion']}"

    return Judgments(verdict, kept=2), judged


def test_a_version_is_judged_once_and_a_new_one_again() -> None:
    memo, judged = counting()
    first = versioned(gang_job(), "u1", "5")
    assert memo.of(first) == memo.of(dict(first)) == "verdict at 5"
    assert memo.of(versioned(first, "u1", "6")) == "verdict at 6"
    assert judged == ["5", "6"]
    assert memo.made == 2


def test_the_least_recently_read_verdict_goes_first() -> None:
    memo, judged = counting()
    a, b, c = (versioned(gang_job(), uid, "1") for uid in ("a", "b", "c"))
    memo.of(a)
    memo.of(b)
    memo.of(a)  # a read again: b is now the oldest
    memo.of(c)  # over the bound of 2: b goes
    memo.of(a)
    memo.of(b)
    assert judged == ["1", "1", "1", "1"]  # a, b, c, then b again


def test_an_object_without_a_version_is_judged_every_time() -> None:
    memo, judged = counting()
    bare = versioned(gang_job(), "u1", "")
    memo.of(bare)
    memo.of(bare)
    assert len(judged) == 2


def test_the_verdict_names_the_owner_and_its_gang() -> None:
    judged = judge(versioned(gang_job(), "job-uid", "3"), S)
    assert (judged.kind, judged.name, judged.uid) == ("Job", "allreduce-pretrain", "job-uid")
    assert judged.gang is not None
    assert judged.invalid == ""
    assert judged.named == "Job/allreduce-pretrain"
    assert judged.target["metadata"]["uid"] == "job-uid"
    broken = gang_job(annotations={keys.COUNT: "zero"})
    assert judge(broken, S).invalid
    assert judge(broken, S).gang is None


def test_reconciles_of_an_unchanged_owner_judge_it_once() -> None:
    t = RecordingTransport()
    owner = versioned(job(), "job-uid", "17")
    jobs = FakeCache([owner], {JOB_UID_INDEX: job_uid_index})
    ctx = context(
        settings=S,
        transport=t,
        workloads=FakeCache([workload()]),
        jobs=jobs,
        pools=FakeCache([], {CLAIM_INDEX: claim_index}),
        checks=checks(),
    )
    reconciler = WorkloadReconciler(ctx)
    for _ in range(3):
        reconciler.reconcile(KEY)
    assert reconciler.owners.made == 1
    jobs.upsert("default/allreduce-pretrain", versioned(owner, "job-uid", "18"))  # changed
    reconciler.reconcile(KEY)
    assert reconciler.owners.made == 2

"""The Jobs of a JobSet. The JobSet controller copies the gang node claims Kueue merged
into an admitted JobSet onto the Job of each replica: on CREATE (a Job made after
admission, or remade by a restart) and on the UPDATE that resumes a Job made while the
JobSet was suspended. Those claims pass only from the JobSet controller, for a Job a
JobSet controls, pinned to one pool and its group; the same Job from anyone else,
with any owner or label, is denied as before."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from atomic_gang import keys as k
from atomic_gang.gang_object import review, review_update
from atomic_gang.job import JOBSET_OWNER, controllers, review_job
from atomic_gang.jobset import API_VERSION, KIND
from atomic_gang.objects import MalformedJobError
from tests.support.jobs import JOBSET_CONTROLLER, PINNED_POD, gang_jobset, jobset_job, settings

S = settings()
KUEUE = S.kueue_username
TENANT = "system:serviceaccount:team-a:trainer"
CLAIMS = {"ReservedSelectorKey", "ReservedToleration"}


def _reasons(job: dict[str, Any], user: str) -> set[str]:
    found = review(job, S, namespace="default", user=user)
    if found is None:
        return set()
    return {v.reason for v in found.violations}


def _update(old: dict[str, Any], new: dict[str, Any], user: str) -> set[str]:
    found = review_update(old, new, S, user=user)
    if found is None:
        return set()
    return {v.reason for v in found.violations}


def test_the_setting_names_the_jobset_controller_and_the_owner_its_api() -> None:
    assert S.job_set_username == JOBSET_CONTROLLER
    assert JOBSET_OWNER == (API_VERSION, KIND)


def test_the_jobset_controller_creates_its_admitted_jobsets_jobs_pinned() -> None:
    job = jobset_job(pod=PINNED_POD)
    assert _reasons(job, JOBSET_CONTROLLER) == set()
    assert review_job(job, S, user=JOBSET_CONTROLLER) is None  # not a gang of its own
    # Made while the JobSet is suspended: no claims yet, nothing to judge.
    assert review(jobset_job(suspend=True), S, user=JOBSET_CONTROLLER) is None


@pytest.mark.parametrize(
    "user",
    [
        pytest.param(TENANT, id="tenant"),
        pytest.param("", id="no-requester"),  # atomic-gang validate
        pytest.param(KUEUE, id="kueue"),  # Kueue never creates a JobSet's Jobs
        pytest.param("system:serviceaccount:jobset-system:default", id="another-sa-there"),
    ],
)
def test_the_same_job_from_anyone_else_is_denied(user: str) -> None:
    """A tenant's Job that forges the JobSet owner, its labels and its name."""
    assert _reasons(jobset_job(pod=PINNED_POD), user) == CLAIMS


def _owned_by(job: dict[str, Any], owners: list[dict[str, Any]]) -> dict[str, Any]:
    job["metadata"]["ownerReferences"] = owners
    return job


_JOBSET_REF = {"apiVersion": API_VERSION, "kind": KIND, "name": "js", "uid": "u"}


@pytest.mark.parametrize(
    "owners",
    [
        pytest.param([], id="no-owner"),
        pytest.param([{**_JOBSET_REF, "controller": False}], id="jobset-not-controller"),
        pytest.param([{**_JOBSET_REF, "controller": "true"}], id="controller-not-a-bool"),
        pytest.param(
            [{**_JOBSET_REF, "apiVersion": "jobset.x-k8s.io/v1alpha1", "controller": True}],
            id="other-version",
        ),
        pytest.param(
            [{**_JOBSET_REF, "kind": "TrainJob", "controller": True}],
            id="other-kind",
        ),
        pytest.param(
            [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "c", "controller": True}],
            id="cronjob",
        ),
        pytest.param(
            [{**_JOBSET_REF, "controller": True}, {**_JOBSET_REF, "name": "b", "controller": True}],
            id="two-controllers",
        ),
    ],
)
def test_the_jobset_controller_may_pin_only_a_job_a_jobset_controls(
    owners: list[dict[str, Any]],
) -> None:
    job = _owned_by(jobset_job(pod=PINNED_POD), owners)
    assert _reasons(job, JOBSET_CONTROLLER) == CLAIMS


def test_a_non_controlling_owner_beside_the_jobset_changes_nothing() -> None:
    job = jobset_job(pod=PINNED_POD)
    job["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c"}
    )
    assert _reasons(job, JOBSET_CONTROLLER) == set()


_GANG_TOLERATION = PINNED_POD["tolerations"][0]


@pytest.mark.parametrize(
    ("pod", "reasons"),
    [
        pytest.param(
            {"nodeSelector": {k.POOL: "pretrain-p4d"}, "tolerations": [_GANG_TOLERATION]},
            CLAIMS,
            id="pool-only",
        ),
        pytest.param(
            {"nodeSelector": {k.GROUP: "pretrain-p4d-g7"}},
            {"ReservedSelectorKey"},
            id="group-only",
        ),
        pytest.param({"tolerations": [_GANG_TOLERATION]}, {"ReservedToleration"}, id="toleration"),
        pytest.param(
            {
                **PINNED_POD,
                "tolerations": [_GANG_TOLERATION, {**_GANG_TOLERATION, "value": "someone-elses"}],
            },
            CLAIMS,
            id="another-pools-toleration",
        ),
        pytest.param(
            {"tolerations": [{"operator": "Exists"}]}, {"ReservedToleration"}, id="tolerate-all"
        ),
        pytest.param(
            {"tolerations": [{"key": k.GANG_TAINT, "operator": "Exists"}]},
            {"ReservedToleration"},
            id="tolerate-every-gang",
        ),
        pytest.param(
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": k.POOL, "operator": "In", "values": ["p"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            {"ReservedSelectorKey"},
            id="affinity",
        ),
    ],
)
def test_the_jobset_controllers_claims_must_be_pinned(
    pod: dict[str, Any], reasons: set[str]
) -> None:
    assert _reasons(jobset_job(pod=pod), JOBSET_CONTROLLER) == reasons


def test_a_resourceflavors_toleration_beside_the_pin_passes_as_the_pod_policy_lets_it() -> None:
    flavored = {
        **PINNED_POD,
        "tolerations": [_GANG_TOLERATION, {"key": k.GANG_TAINT, "operator": "Exists"}],
    }
    assert _reasons(jobset_job(pod=flavored), JOBSET_CONTROLLER) == set()


def test_the_jobset_controller_resumes_its_jobs_with_the_pin() -> None:
    """``resumeJob`` merges the admitted JobSet's nodeSelector and tolerations into a
    Job made while the JobSet was suspended, and unsuspends it, in one UPDATE."""
    suspended = jobset_job(suspend=True)
    resumed = jobset_job(pod=PINNED_POD)
    assert _update(suspended, resumed, JOBSET_CONTROLLER) == set()
    assert _update(suspended, resumed, TENANT) == CLAIMS
    # Kueue evicted the JobSet (the JobSet controller suspended its Jobs, claims kept)
    # and admitted it again on a fresh gang: the merge moves the group.
    stale = jobset_job(pod=PINNED_POD, suspend=True)
    fresh = jobset_job(
        pod={**PINNED_POD, "nodeSelector": {k.POOL: "pretrain-p4d", k.GROUP: "pretrain-p4d-g8"}}
    )
    assert _update(stale, fresh, JOBSET_CONTROLLER) == set()
    assert _update(stale, fresh, TENANT) == {"ReservedSelectorKey"}
    # Its suspend on eviction changes no claim: anyone's, as for any Job.
    assert _update(resumed, stale, JOBSET_CONTROLLER) == set()


def test_the_jobset_controllers_update_must_leave_the_job_pinned() -> None:
    suspended = jobset_job(suspend=True)
    half = jobset_job(pod={"nodeSelector": {k.POOL: "pretrain-p4d"}})
    assert _update(suspended, half, JOBSET_CONTROLLER) == {"ReservedSelectorKey"}
    forged = _owned_by(jobset_job(pod=PINNED_POD), [])
    assert _update(suspended, forged, JOBSET_CONTROLLER) == CLAIMS
    # Dropping the claims is Kueue's alone, for a JobSet's Job as for any other.
    assert _update(jobset_job(pod=PINNED_POD), suspended, JOBSET_CONTROLLER) == CLAIMS


def test_a_jobset_with_the_claims_is_denied_whoever_creates_it() -> None:
    js = gang_jobset()
    pod = js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod.update(copy.deepcopy(PINNED_POD))
    for user in (TENANT, JOBSET_CONTROLLER, KUEUE, ""):
        found = review(js, S, namespace="default", user=user)
        assert found is not None
        assert {v.reason for v in found.violations} == CLAIMS, user
    # Adding them later is Kueue's alone (its admission's podSetUpdates).
    assert _update(gang_jobset(), js, JOBSET_CONTROLLER) == CLAIMS
    assert _update(gang_jobset(), js, KUEUE) == set()


@pytest.mark.parametrize(
    "refs",
    [
        pytest.param({"ownerReferences": {"kind": "JobSet"}}, id="object"),
        pytest.param({"ownerReferences": ["JobSet"]}, id="strings"),
    ],
)
def test_malformed_owner_references_are_malformed(refs: dict[str, Any]) -> None:
    job = jobset_job(pod=PINNED_POD)
    job["metadata"].update(refs)
    with pytest.raises(MalformedJobError):
        controllers(job)
    with pytest.raises(MalformedJobError):
        review(job, S, user=JOBSET_CONTROLLER)

"""Hostile corpus, part 1: what a tenant may choose (images, subnets, reservations,
roles, lifetimes, gang nodes, one pod per node).

Each case is a request a Job author (or anyone who can reach the Service) can send,
posted to one real webhook process whose settings restrict what a tenant may pick.
Every case here was allowed, or answered wrongly, before the webhook was hardened.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from atomic_gang import keys as k
from tests.support.jobs import (
    JOBSET_CONTROLLER,
    PINNED_POD,
    TRAINER_CONTROLLER,
    gang_job,
    gang_jobset,
    gang_trainjob,
    jobset_job,
    one_pod_per_node,
    plain_job,
    runtime_patch,
    trainer_jobset,
)
from tests.support.reviews import review
from tests.support.webhook_proc import SETTINGS_YAML, run_webhook

PATH = "/validate/batch/v1/job"
KUEUE = "system:serviceaccount:kueue-system:kueue-controller-manager"
JOBSET = "system:serviceaccount:batch-system:jobset"  # a JobSet installed elsewhere
TRAINER = "system:serviceaccount:kubeflow:kubeflow-trainer-controller-manager"  # platform
AMI = "ami-0123456789abcdef0"
STRICT_YAML = SETTINGS_YAML + (
    f"jobSetUsername: {JOBSET}\n"
    f"trainerUsername: {TRAINER}\n"
    f'allowedAmiIds: ["{AMI}", "ami-0aa*"]\n'
    'allowedSubnets: ["subnet-0123456789abcdef0"]\n'
    'allowedCapacityReservationIds: ["cr-0123456789abcdef0"]\n'
)


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    tmp: Path = tmp_path_factory.mktemp("strict")
    with run_webhook(tmp, settings_yaml=STRICT_YAML) as wh, wh.client(timeout=30) as client:
        yield client


def _post(client: httpx.Client, doc: dict[str, Any]) -> httpx.Response:
    return client.post(PATH, content=json.dumps(doc).encode())


def _response(client: httpx.Client, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
    r = _post(client, review(obj, **kw))
    assert r.status_code == 200, r.text[:300]
    out: dict[str, Any] = r.json()["response"]
    return out


def _reasons(response: dict[str, Any]) -> set[str]:
    assert response["allowed"] is False, response
    return {c["reason"] for c in response["status"]["details"]["causes"]}


def _template(job: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = job["spec"]["template"]["spec"]
    return pod


# --- 1. A gang Job must be queued -------------------------------------------------------


@pytest.mark.parametrize("value", [None, ""], ids=["absent", "empty"])
def test_gang_job_without_queue_label_is_denied(strict: httpx.Client, value: str | None) -> None:
    job = gang_job(labels={k.QUEUE_NAME_LABEL: value})
    response = _response(strict, job)
    assert _reasons(response) == {"NotQueued"}
    (cause,) = response["status"]["details"]["causes"]
    assert cause["field"] == f"metadata.labels[{k.QUEUE_NAME_LABEL}]"
    assert k.QUEUE_NAME_LABEL in response["status"]["message"]


def test_update_that_drops_the_queue_label_is_denied(strict: httpx.Client) -> None:
    new = gang_job(labels={k.QUEUE_NAME_LABEL: None})
    assert "NotQueued" in _reasons(_response(strict, new, operation="UPDATE", old=gang_job()))


# --- 2. What a tenant may pick is the admin's call --------------------------------------


@pytest.mark.parametrize(
    ("annotations", "reason"),
    [
        pytest.param({k.AMI_ID: "ami-0fffffffffffffff0"}, "AmiNotAllowed", id="ami"),
        pytest.param(
            {k.AVAILABILITY_ZONES: None, k.SUBNETS: "subnet-0123456789abcdef0,subnet-0fff0000"},
            "SubnetNotAllowed",
            id="subnet",
        ),
        pytest.param(
            {k.CAPACITY_RESERVATION_ID: "cr-0fffffffffffffff0"},
            "CapacityReservationNotAllowed",
            id="reservation",
        ),
        pytest.param({k.MAX_LIFETIME: "100000h"}, "MaxLifetimeExceedsLimit", id="lifetime"),
    ],
)
def test_tenant_choices_outside_the_allowlists_are_denied(
    strict: httpx.Client, annotations: dict[str, str | None], reason: str
) -> None:
    response = _response(strict, gang_job(annotations=annotations))
    assert _reasons(response) == {reason}


@pytest.mark.parametrize("ami", [AMI, "ami-0aa456789abcdef01"], ids=["exact", "glob"])
def test_allowed_ami_is_admitted(strict: httpx.Client, ami: str) -> None:
    assert (
        _response(strict, one_pod_per_node(gang_job(annotations={k.AMI_ID: ami})))["allowed"]
        is True
    )


# --- 3. Gang nodes belong to their gang -------------------------------------------------

_AFFINITY_ON_POOL = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": k.POOL, "operator": "In", "values": ["other"]}]}
            ]
        }
    }
}
_PREFERRED_ON_GROUP = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1,
                "preference": {"matchExpressions": [{"key": k.GROUP, "operator": "Exists"}]},
            }
        ]
    }
}
_GANG_TOLERATION = {"key": k.GANG_TAINT, "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        pytest.param("affinity", _AFFINITY_ON_POOL, "ReservedSelectorKey", id="required-affinity"),
        pytest.param("affinity", _PREFERRED_ON_GROUP, "ReservedSelectorKey", id="preferred"),
        pytest.param("tolerations", [_GANG_TOLERATION], "ReservedToleration", id="toleration"),
        pytest.param("tolerations", [{"operator": "Exists"}], "ReservedToleration", id="all"),
    ],
)
@pytest.mark.parametrize("maker", [gang_job, plain_job], ids=["gang", "plain"])
def test_job_template_may_not_claim_gang_nodes(
    strict: httpx.Client, maker: Any, field: str, value: Any, reason: str
) -> None:
    job = maker()
    _template(job)[field] = value
    assert reason in _reasons(_response(strict, job))


def _admitted_by_kueue(old: dict[str, Any]) -> dict[str, Any]:
    new: dict[str, Any] = copy.deepcopy(old)
    new["spec"]["suspend"] = False
    pod = _template(new)
    pod["nodeSelector"] = {k.POOL: "pretrain-p4d", k.GROUP: "g-1"}
    pod["tolerations"] = [{**_GANG_TOLERATION, "operator": "Equal", "value": "pretrain-p4d"}]
    return new


def test_update_adding_gang_selectors_is_denied_unless_kueue_makes_it(
    strict: httpx.Client,
) -> None:
    old = one_pod_per_node(gang_job(spec={"suspend": True}))
    new = _admitted_by_kueue(old)
    denied = _response(strict, new, operation="UPDATE", old=old)
    assert {"ReservedSelectorKey", "ReservedToleration"} <= _reasons(denied)
    kueue = _response(strict, new, operation="UPDATE", old=old, user=KUEUE)
    assert kueue["allowed"] is True, kueue
    # Kueue's own later writes (e.g. the stop that restores the template) pass too;
    # anyone else's removal of the claims is denied (the pods would lose their pinning).
    assert _response(strict, old, operation="UPDATE", old=new, user=KUEUE)["allowed"] is True
    dropped = _response(strict, old, operation="UPDATE", old=new)
    assert {"ReservedSelectorKey", "ReservedToleration"} <= _reasons(dropped)


def test_only_the_jobset_controller_pins_a_jobsets_jobs(strict: httpx.Client) -> None:
    """The Jobs of an admitted gang JobSet carry the claims Kueue merged into it. The
    JobSet controller named by jobSetUsername may create them, or resume them,
    pinned; a tenant's Job forging the JobSet owner and labels is denied, and so is
    the default identity the settings file replaced."""
    job = jobset_job(pod=PINNED_POD)
    assert _response(strict, job, user=JOBSET)["allowed"] is True
    for user in ("alice", JOBSET_CONTROLLER, KUEUE):
        assert _reasons(_response(strict, job, user=user)) == {
            "ReservedSelectorKey",
            "ReservedToleration",
        }, user
    suspended = jobset_job(suspend=True)
    resumed = _response(strict, job, operation="UPDATE", old=suspended, user=JOBSET)
    assert resumed["allowed"] is True, resumed
    forged = _response(strict, job, operation="UPDATE", old=suspended, user="alice")
    assert _reasons(forged) == {"ReservedSelectorKey", "ReservedToleration"}
    unpinned = jobset_job(pod={"nodeSelector": {k.POOL: "pretrain-p4d"}})
    assert _reasons(_response(strict, unpinned, user=JOBSET)) == {"ReservedSelectorKey"}
    jobset = gang_jobset()
    jobset["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"].update(PINNED_POD)
    assert _reasons(_response(strict, jobset, user=JOBSET)) == {
        "ReservedSelectorKey",
        "ReservedToleration",
    }


def test_only_the_trainer_pins_a_trainjobs_jobset(strict: httpx.Client) -> None:
    """The JobSet of an admitted TrainJob carries the claims Kueue patched into the
    TrainJob. The Trainer named by trainerUsername may create it, resume it or clear it;
    a tenant's JobSet forging the TrainJob owner is denied, and so is the default
    identity the settings file replaced."""
    jobset = trainer_jobset(pod=PINNED_POD)
    assert _response(strict, jobset, user=TRAINER)["allowed"] is True
    for user in ("alice", TRAINER_CONTROLLER, KUEUE, JOBSET):
        assert _reasons(_response(strict, jobset, user=user)) == {
            "ReservedSelectorKey",
            "ReservedToleration",
        }, user
    suspended = trainer_jobset(suspend=True)
    for old, new in ((suspended, jobset), (jobset, suspended)):
        moved = _response(strict, new, operation="UPDATE", old=old, user=TRAINER)
        assert moved["allowed"] is True, moved
        forged = _response(strict, new, operation="UPDATE", old=old, user="alice")
        assert _reasons(forged) == {"ReservedSelectorKey", "ReservedToleration"}
    unpinned = trainer_jobset(pod={"tolerations": PINNED_POD["tolerations"]})
    assert _reasons(_response(strict, unpinned, user=TRAINER)) == {"ReservedToleration"}


def test_a_trainjob_gets_its_pin_from_kueue_only(strict: httpx.Client) -> None:
    queued = gang_trainjob(patches=[runtime_patch({})], suspend=True)
    assert _response(strict, queued)["allowed"] is True
    assert _reasons(_response(strict, gang_trainjob(count=3))) == {"CountMismatch"}
    admitted = gang_trainjob(patches=[runtime_patch()], suspend=False)
    by_kueue = _response(strict, admitted, operation="UPDATE", old=queued, user=KUEUE)
    assert by_kueue["allowed"] is True, by_kueue
    for user in ("alice", TRAINER):
        forged = _response(strict, admitted, operation="UPDATE", old=queued, user=user)
        assert _reasons(forged) == {"ReservedSelectorKey", "ReservedToleration"}, user
    assert _reasons(_response(strict, admitted, user=KUEUE)) == {
        "ReservedSelectorKey",
        "ReservedToleration",
    }


def test_update_may_not_move_parallelism_away_from_count(strict: httpx.Client) -> None:
    old = gang_job(count=4)
    new = gang_job(count=4, spec={"parallelism": 64, "completions": 64})
    assert _reasons(_response(strict, new, operation="UPDATE", old=old)) == {"CountMismatch"}


# --- 5. Exactness -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["\u0661h", "1\u0660m", "\U0001d7d9h"], ids=["ar", "mixed", "math"]
)
@pytest.mark.parametrize("key", [k.KEEP_WARM_TTL, k.MAX_LIFETIME])
def test_durations_take_ascii_digits_only(strict: httpx.Client, key: str, value: str) -> None:
    assert _reasons(_response(strict, gang_job(annotations={key: value}))) == {"InvalidDuration"}


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT", "create", "", "update"])
def test_unknown_operations_are_malformed(strict: httpx.Client, operation: str) -> None:
    r = _post(strict, review(gang_job(), operation=operation, old=gang_job()))
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "UnsupportedOperation"


# --- 6. N pods on N nodes ---------------------------------------------------------------


def test_gang_without_one_pod_per_node_gets_a_warning(strict: httpx.Client) -> None:
    response = _response(strict, gang_job())
    assert response["allowed"] is True
    (warning,) = response["warnings"]
    assert "kubernetes.io/hostname" in warning
    assert "podAntiAffinity" in warning


@pytest.mark.parametrize(
    "pod_patch",
    [
        pytest.param(one_pod_per_node(gang_job())["spec"]["template"]["spec"], id="anti-affinity"),
        pytest.param(
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {
                            "matchLabels": {"batch.kubernetes.io/job-name": "allreduce-pretrain"}
                        },
                    }
                ]
            },
            id="spread",
        ),
        pytest.param(
            {
                "containers": [
                    {
                        "name": "t",
                        "image": "t",
                        "resources": {"limits": {"nvidia.com/gpu": "8"}},
                    }
                ]
            },
            id="gpu",
        ),
    ],
)
def test_gang_that_spreads_gets_no_warning(strict: httpx.Client, pod_patch: dict[str, Any]) -> None:
    job = gang_job()
    _template(job).update(pod_patch)
    response = _response(strict, job)
    assert response["allowed"] is True
    assert "warnings" not in response

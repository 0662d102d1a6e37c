"""The JobSet of a TrainJob. The Kubeflow Trainer (v2.2.1) applies a TrainJob's JobSet
from its runtime and runtime patches: created while the TrainJob is suspended (no
claims), updated with Kueue's patch merged in as Kueue unsuspends it (pinned), created
pinned when it is made after admission, and updated without the claims once Kueue stops
the TrainJob and takes its patch back. Those claims pass only from the Trainer, for a
JobSet a TrainJob controls, pinned to one pool and its group (or dropped whole); the
same JobSet from anyone else, with any owner, is denied as before."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from atomic_gang import keys as k
from atomic_gang.gang_object import review, review_update
from atomic_gang.jobset import TRAINJOB_OWNER, review_jobset
from atomic_gang.trainjob import API_VERSION, KIND
from tests.support.jobs import (
    JOBSET_CONTROLLER,
    PINNED_POD,
    TRAINER_CONTROLLER,
    gang_trainjob,
    settings,
    trainer_jobset,
)

S = settings()
KUEUE = S.kueue_username
TENANT = "system:serviceaccount:team-a:trainer"
CLAIMS = {"ReservedSelectorKey", "ReservedToleration"}
_TOLERATION = PINNED_POD["tolerations"][0]
MOVED = {**PINNED_POD, "nodeSelector": {k.POOL: "pretrain-p4d", k.GROUP: "pretrain-p4d-g8"}}


def _reasons(jobset: dict[str, Any], user: str) -> set[str]:
    found = review(jobset, S, namespace="default", user=user)
    return set() if found is None else {v.reason for v in found.violations}


def _update(old: dict[str, Any], new: dict[str, Any], user: str) -> set[str]:
    found = review_update(old, new, S, user=user)
    return set() if found is None else {v.reason for v in found.violations}


def test_the_setting_names_the_trainer_and_the_owner_its_api() -> None:
    assert S.trainer_username == TRAINER_CONTROLLER
    assert TRAINJOB_OWNER == (API_VERSION, KIND)
    assert settings(trainerUsername="system:serviceaccount:ml:trainer").trainer_username == (
        "system:serviceaccount:ml:trainer"
    )


def test_the_trainer_creates_a_queued_trainjobs_jobset_without_claims() -> None:
    """The TrainJob is created suspended (Kueue's webhook), and so is its JobSet, with
    the runtime's templates and Kueue's empty patch: nothing to judge."""
    assert review(trainer_jobset(suspend=True), S, user=TRAINER_CONTROLLER) is None
    # The JobSet carries none of the TrainJob's labels or annotations: no gang itself.
    assert review_jobset(trainer_jobset(pod=PINNED_POD), S, user=TRAINER_CONTROLLER) is None


def test_the_trainer_creates_an_admitted_trainjobs_jobset_pinned() -> None:
    assert _reasons(trainer_jobset(pod=PINNED_POD), TRAINER_CONTROLLER) == set()


@pytest.mark.parametrize(
    "user",
    [
        pytest.param(TENANT, id="tenant"),
        pytest.param("", id="no-requester"),  # atomic-gang validate
        pytest.param(KUEUE, id="kueue"),  # Kueue never creates a TrainJob's JobSet
        pytest.param(JOBSET_CONTROLLER, id="jobset-controller"),
        pytest.param("system:serviceaccount:kubeflow-system:default", id="another-sa-there"),
    ],
)
def test_the_same_jobset_from_anyone_else_is_denied(user: str) -> None:
    """A tenant's JobSet forging the TrainJob owner, its name and the Trainer's shape."""
    assert _reasons(trainer_jobset(pod=PINNED_POD), user) == CLAIMS
    resumed = _update(trainer_jobset(suspend=True), trainer_jobset(pod=PINNED_POD), user)
    if user != KUEUE:
        assert resumed == CLAIMS


_TRAINJOB_REF = {"apiVersion": API_VERSION, "kind": KIND, "name": "tj", "uid": "u"}


@pytest.mark.parametrize(
    "owners",
    [
        pytest.param([], id="no-owner"),
        pytest.param([{**_TRAINJOB_REF, "controller": False}], id="trainjob-not-controller"),
        pytest.param([{**_TRAINJOB_REF, "controller": "true"}], id="controller-not-a-bool"),
        pytest.param(
            [{**_TRAINJOB_REF, "apiVersion": "kubeflow.org/v1", "controller": True}],
            id="other-version",
        ),
        pytest.param(
            [{**_TRAINJOB_REF, "kind": "PyTorchJob", "controller": True}], id="other-kind"
        ),
        pytest.param(
            [{**_TRAINJOB_REF, "controller": True}, {**_TRAINJOB_REF, "controller": True}],
            id="two-controllers",
        ),
    ],
)
def test_the_trainer_may_pin_only_a_jobset_a_trainjob_controls(
    owners: list[dict[str, Any]],
) -> None:
    js = trainer_jobset(pod=PINNED_POD)
    js["metadata"]["ownerReferences"] = owners
    assert _reasons(js, TRAINER_CONTROLLER) == CLAIMS
    old = trainer_jobset(suspend=True)
    old["metadata"]["ownerReferences"] = owners
    assert _update(old, js, TRAINER_CONTROLLER) == CLAIMS


@pytest.mark.parametrize(
    ("pod", "reasons"),
    [
        pytest.param(
            {"nodeSelector": {k.POOL: "pretrain-p4d"}, "tolerations": [_TOLERATION]},
            CLAIMS,
            id="pool-only",
        ),
        pytest.param({"tolerations": [_TOLERATION]}, {"ReservedToleration"}, id="toleration"),
        pytest.param(
            {**PINNED_POD, "tolerations": [{**_TOLERATION, "value": "someone-elses"}]},
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
    ],
)
def test_the_trainers_claims_must_be_pinned(pod: dict[str, Any], reasons: set[str]) -> None:
    """What a runtime from before the webhook could still feed in: never pinned."""
    assert _reasons(trainer_jobset(pod=pod), TRAINER_CONTROLLER) == reasons
    assert _update(trainer_jobset(suspend=True), trainer_jobset(pod=pod), TRAINER_CONTROLLER) == (
        reasons
    )


def test_a_gang_role_beside_a_claimless_initializer_passes() -> None:
    js = trainer_jobset(pod=PINNED_POD)
    init = copy.deepcopy(js["spec"]["replicatedJobs"][0])
    init["name"] = "dataset-initializer"
    init["template"]["spec"]["template"]["spec"] = {"containers": [{"name": "i", "image": "i"}]}
    js["spec"]["replicatedJobs"].insert(0, init)
    assert _reasons(js, TRAINER_CONTROLLER) == set()
    init["template"]["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
    assert _reasons(js, TRAINER_CONTROLLER) == {"ReservedToleration"}


def test_the_trainer_resumes_moves_and_clears_the_pin() -> None:
    suspended = trainer_jobset(suspend=True)
    resumed = trainer_jobset(pod=PINNED_POD)
    assert _update(suspended, resumed, TRAINER_CONTROLLER) == set()
    # Kueue stopped the TrainJob (suspended, its patch kept until the pods are gone):
    # the Trainer suspends the JobSet, claims unchanged.
    stopped = trainer_jobset(pod=PINNED_POD, suspend=True)
    assert _update(resumed, stopped, TRAINER_CONTROLLER) == set()
    # Kueue took its patch back: the Trainer's apply drops every claim.
    cleared = trainer_jobset(suspend=True)
    assert _update(stopped, cleared, TRAINER_CONTROLLER) == set()
    assert _update(stopped, cleared, TENANT) == CLAIMS
    # Admitted again on a fresh gang: the new group, in one apply with the resume.
    assert _update(stopped, trainer_jobset(pod=MOVED), TRAINER_CONTROLLER) == set()
    assert _update(stopped, trainer_jobset(pod=MOVED), TENANT) == {"ReservedSelectorKey"}


def test_the_trainer_may_not_drop_half_a_pin() -> None:
    """A selector dropped and the toleration kept would let the pods onto any node of
    the pool: not pinned, not cleared."""
    half = trainer_jobset(pod={"tolerations": [_TOLERATION]}, suspend=True)
    found = _update(trainer_jobset(pod=PINNED_POD), half, TRAINER_CONTROLLER)
    assert found == {"ReservedSelectorKey"}


def test_a_gang_jobset_keeps_its_own_rules_from_the_trainer_too() -> None:
    """A JobSet that carries our keys (copied from a runtime's or a patch's metadata,
    which the webhook refuses) is judged as a gang JobSet: its claims pass pinned, its
    keys' rules still hold."""
    js = trainer_jobset(gang_trainjob(), pod=PINNED_POD)
    js["metadata"]["labels"] = {k.POOL: "pretrain-p4d"}
    js["metadata"]["annotations"] = {k.COUNT: "4", k.INSTANCE_TYPE: "p4d.24xlarge"}
    assert _reasons(js, TRAINER_CONTROLLER) == {"NotQueued"}

"""The pure AdmissionReview layer: envelope checks, verdicts, reply shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from atomic_gang import keys as k
from atomic_gang_webhook.review import (
    Decision,
    WebhookError,
    build_response,
    decide,
    parse_review,
)
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
    settings,
    trainer_jobset,
)
from tests.support.reviews import body, review

S = settings()


def _env(**request: Any) -> bytes:
    base = review(gang_job())
    base["request"].update(request)
    return json.dumps(base).encode()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(b"{", "InvalidJSON", id="bad-json"),
        pytest.param(b"\xff\xfe", "InvalidJSON", id="not-utf8"),
        pytest.param(b"[]", "BadRequest", id="array"),
        pytest.param(b'{"kind":"AdmissionReview"}', "NotAReview", id="no-api-version"),
        pytest.param(
            json.dumps({**review(gang_job()), "apiVersion": "admission.k8s.io/v1beta1"}).encode(),
            "NotAReview",
            id="v1beta1",
        ),
        pytest.param(
            b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}',
            "BadRequest",
            id="no-request",
        ),
        pytest.param(_env(uid=""), "MissingUID", id="empty-uid"),
        pytest.param(_env(uid=7), "MissingUID", id="int-uid"),
        pytest.param(_env(kind={"group": "", "version": "v1", "kind": "Pod"}), "NotAJob", id="pod"),
        pytest.param(_env(object=[1]), "BadRequest", id="object-not-dict"),
        pytest.param(_env(object={"kind": "CronJob"}), "NotAJob", id="object-kind"),
        pytest.param(_env(operation="UPDATE"), "BadRequest", id="update-without-old"),
        pytest.param(_env(operation=None), "BadRequest", id="no-operation"),
        pytest.param(_env(operation="DELETE"), "UnsupportedOperation", id="delete"),
        pytest.param(_env(operation="create"), "UnsupportedOperation", id="lower-case"),
        pytest.param(_env(uid="u" * 129), "MissingUID", id="uid-too-long"),
        pytest.param(
            json.dumps({"storm": ["atomic-gang.k8s.aws/"] * 1025}).encode(),
            "TooManyKeys",
            id="prefix-storm-refused-unparsed",
        ),
    ],
)
def test_malformed_envelopes_are_400(raw: bytes, reason: str) -> None:
    with pytest.raises(WebhookError) as info:
        parse_review(raw)
    assert info.value.status == 400
    assert info.value.reason == reason


def test_malformed_job_fields_are_400() -> None:
    job = gang_job()
    job["metadata"]["annotations"] = {k.COUNT: 4}
    req = parse_review(body(job))
    with pytest.raises(WebhookError) as info:
        decide(req, S)
    assert (info.value.status, info.value.reason) == (400, "MalformedJob")


@pytest.mark.parametrize(
    ("obj", "operation", "old", "verdict", "reason"),
    [
        pytest.param(plain_job(), "CREATE", None, "allowed", "NotAGang", id="plain"),
        pytest.param(gang_job(), "CREATE", None, "allowed", "Valid", id="valid"),
        pytest.param(
            gang_job(spec={"parallelism": 2}),
            "CREATE",
            None,
            "denied",
            "CountMismatch",
            id="invalid",
        ),
        pytest.param(gang_job(), "UPDATE", gang_job(), "allowed", "Unchanged", id="update-same"),
        pytest.param(
            gang_job(annotations={k.COUNT: "8"}),
            "UPDATE",
            gang_job(),
            "denied",
            "ImmutableGangField",
            id="update-changed",
        ),
    ],
)
def test_decisions(obj: Any, operation: str, old: Any, verdict: str, reason: str) -> None:
    decision = decide(parse_review(body(obj, operation=operation, old=old)), S)
    assert (decision.verdict, decision.reason) == (verdict, reason)


def test_denial_lists_every_violation_with_fields() -> None:
    job = gang_job(annotations={k.MODE: "spot", k.AMI_ID: "nope"}, spec={"parallelism": 2})
    req = parse_review(body(job, uid="abc"))
    reply = build_response(req, decide(req, S))
    response = reply["response"]
    assert response["uid"] == "abc"
    assert response["allowed"] is False
    status = response["status"]
    assert status["code"] == 422
    for key in (k.MODE, k.AMI_ID, k.COUNT):
        assert key in status["message"]
    assert "'spot'" in status["message"]
    causes = status["details"]["causes"]
    assert {c["reason"] for c in causes} == {"InvalidMode", "InvalidAmiId", "CountMismatch"}
    assert f"metadata.annotations[{k.MODE}]" in {c["field"] for c in causes}
    assert status["message"].startswith("Job default/allreduce-pretrain has 3 invalid")


def test_allowed_reply_has_no_status() -> None:
    req = parse_review(body(gang_job(), uid="u"))
    reply = build_response(req, Decision("allowed", "Valid"))
    assert reply == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u", "allowed": True},
    }


@pytest.mark.parametrize(
    ("where", "entries"),
    [
        pytest.param("annotations", {"other/key": 7}, id="unrelated-annotation-not-a-string"),
        pytest.param("annotations", {k.COUNT: None}, id="null-value"),
        pytest.param("labels", {"app": {"nested": "x"}}, id="unrelated-label-object"),
        pytest.param("labels", {k.POOL: ["a"]}, id="pool-label-list"),
    ],
)
def test_every_metadata_entry_is_type_checked(where: str, entries: dict[str, object]) -> None:
    """Only our prefix's keys reach the rules, but a non-string anywhere in the maps is
    a malformed object (400), never silently dropped."""
    job = gang_job()
    job["metadata"][where] = {**job["metadata"][where], **entries}
    req = parse_review(body(job))
    with pytest.raises(WebhookError) as info:
        decide(req, S)
    assert (info.value.status, info.value.reason) == (400, "MalformedJob")
    assert f"metadata.{where} must map strings to strings" in info.value.message


def test_unrelated_metadata_does_not_change_the_verdict() -> None:
    job = gang_job()
    job["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = (
        "x" * 100_000
    )
    job["metadata"]["labels"]["app"] = " spaced "
    decision = decide(parse_review(body(job)), S)
    assert (decision.verdict, decision.reason) == ("allowed", "Valid")


def test_require_one_pod_per_node_turns_the_warning_into_a_denial() -> None:
    strict = settings(requireOnePodPerNode=True)
    packed = decide(parse_review(body(gang_job())), strict)
    assert (packed.verdict, packed.reason, packed.warnings) == ("denied", "PodsNotSpread", ())
    spread = decide(parse_review(body(one_pod_per_node(gang_job()))), strict)
    assert (spread.verdict, spread.warnings) == ("allowed", ())
    warned = decide(parse_review(body(gang_job())), S)
    assert warned.verdict == "allowed"
    assert "kubernetes.io/hostname" in warned.warnings[0]


def test_a_reservation_list_and_min_runtime_are_judged_together() -> None:
    """Both new rules in one denial: a listed id twice, a min-runtime of 0s."""
    twice = "cr-0123456789abcdef0,cr-0fedcba9876543210,cr-0123456789abcdef0"
    job = gang_job(annotations={k.CAPACITY_RESERVATION_ID: twice, k.MIN_RUNTIME: "0s"})
    req = parse_review(body(job, uid="cr"))
    status = build_response(req, decide(req, S))["response"]["status"]
    causes = {c["field"]: c["reason"] for c in status["details"]["causes"]}
    assert causes == {
        f"metadata.annotations[{k.CAPACITY_RESERVATION_ID}]": "InvalidCapacityReservationId",
        f"metadata.annotations[{k.MIN_RUNTIME}]": "InvalidMinRuntime",
    }
    assert "cr-0123456789abcdef0 is listed twice" in status["message"]
    ok = gang_job(
        annotations={k.CAPACITY_RESERVATION_ID: "cr-0123456789abcdef0,cr-0fedcba9876543210"}
    )
    good = parse_review(body(ok, uid="ok"))
    assert build_response(good, decide(good, S))["response"]["allowed"] is True


def test_the_requests_namespace_picks_its_allowlists() -> None:
    ami = "ami-0bbbbbbbbbbbbbbb1"
    scoped = settings(
        namespaceAllowlists=[
            {"namespaces": ["team-b"], "allowedAmiIds": [ami]},
            {"namespaces": ["default"], "allowedAmiIds": ["ami-0aaaaaaaaaaaaaaa1"]},
        ]
    )
    job = gang_job(annotations={k.AMI_ID: ami})
    raw = review(job)
    raw["request"]["namespace"] = "team-b"
    allowed = decide(parse_review(json.dumps(raw).encode()), scoped)
    assert allowed.verdict == "allowed"
    raw["request"]["namespace"] = "default"
    denied = decide(parse_review(json.dumps(raw).encode()), scoped)
    assert (denied.verdict, denied.reason) == ("denied", "AmiNotAllowed")


def test_a_pool_name_reserved_for_other_namespaces_is_denied_at_apply_time() -> None:
    reserved = settings(poolNamespaces=[{"names": "pretrain-*", "namespaces": ["team-a"]}])
    raw = review(gang_job())  # pool label pretrain-p4d
    raw["request"]["namespace"] = "team-a"
    assert decide(parse_review(json.dumps(raw).encode()), reserved).verdict == "allowed"
    raw["request"]["namespace"] = "team-b"
    req = parse_review(json.dumps(raw).encode())
    denied = decide(req, reserved)
    assert (denied.verdict, denied.reason) == ("denied", "PoolReserved")
    message = build_response(req, denied)["response"]["status"]["message"]
    assert "reserved for other namespaces by the cluster's admin (poolNamespaces)" in message
    assert "team-a" not in message  # the namespaces it is for are the admin's to tell
    # An unlisted name is nobody's at apply time: ownership is the provisioner's call.
    raw["request"]["namespace"] = "team-b"
    free = settings(poolNamespaces=[{"names": "other-*", "namespaces": ["team-a"]}])
    assert decide(parse_review(json.dumps(raw).encode()), free).verdict == "allowed"


def test_a_jobset_is_reviewed_by_the_jobset_rules_and_denied_as_a_jobset() -> None:
    good = parse_review(body(gang_jobset()))
    assert good.kind.kind == "JobSet"
    assert decide(good, S).verdict == "allowed"
    req = parse_review(body(gang_jobset(count=3)))
    decision = decide(req, S)
    assert (decision.verdict, decision.reason) == ("denied", "CountMismatch")
    status = build_response(req, decision)["response"]["status"]
    assert status["message"].startswith(
        "JobSet default/allreduce-jobset has 1 invalid gang setting"
    )
    assert "workers: 2 replicas × 2 = 4 pods" in status["message"]
    assert (status["details"]["group"], status["details"]["kind"]) == ("jobset.x-k8s.io", "jobsets")


def test_a_jobset_update_that_changes_the_count_is_denied() -> None:
    old, new = gang_jobset(), gang_jobset(annotations={k.COUNT: "5"})
    decision = decide(parse_review(body(new, operation="UPDATE", old=old)), S)
    assert (decision.verdict, decision.reason) == ("denied", "ImmutableGangField")


def test_a_kind_we_do_not_serve_is_a_bad_request() -> None:
    lws = {"group": "leaderworkerset.x-k8s.io", "version": "v1", "kind": "LeaderWorkerSet"}
    with pytest.raises(WebhookError) as err:
        parse_review(body(gang_job(), kind=lws))
    assert err.value.status == 400
    for served in (
        "batch/v1 Job",
        "jobset.x-k8s.io/v1alpha2 JobSet",
        "trainer.kubeflow.org/v1alpha1 TrainJob",
        "trainer.kubeflow.org/v1alpha1 TrainingRuntime",
        "trainer.kubeflow.org/v1alpha1 ClusterTrainingRuntime",
    ):
        assert served in err.value.message
    mislabelled = gang_job()
    with pytest.raises(WebhookError):
        parse_review(
            body(
                mislabelled,
                kind={"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
            )
        )


def _decided(obj: dict[str, Any], user: str, **kw: Any) -> tuple[str, str]:
    decision = decide(parse_review(body(obj, user=user, **kw)), S)
    return decision.verdict, decision.reason


def test_the_requester_decides_whether_a_jobsets_pinned_job_may_be_created() -> None:
    """The userInfo of a CREATE reaches the review: the JobSet controller's Job for an
    admitted JobSet passes, the same Job (JobSet owner, labels, name) from a tenant
    does not."""
    job = jobset_job(pod=PINNED_POD)
    assert _decided(job, JOBSET_CONTROLLER) == ("allowed", "NotAGang")
    assert _decided(job, "alice") == ("denied", "ReservedSelectorKey")
    unpinned = jobset_job(pod={"tolerations": PINNED_POD["tolerations"]})
    assert _decided(unpinned, JOBSET_CONTROLLER) == ("denied", "ReservedToleration")


def test_the_jobset_controller_resumes_a_jobsets_job_with_the_pin() -> None:
    old, new = jobset_job(suspend=True), jobset_job(pod=PINNED_POD)
    assert _decided(new, JOBSET_CONTROLLER, operation="UPDATE", old=old) == (
        "allowed",
        "NotAGang",
    )
    assert _decided(new, "alice", operation="UPDATE", old=old) == (
        "denied",
        "ReservedSelectorKey",
    )


def test_a_jobset_claiming_gang_nodes_is_denied_even_from_the_jobset_controller() -> None:
    js = gang_jobset()
    js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"].update(PINNED_POD)
    for user in ("alice", JOBSET_CONTROLLER):
        assert _decided(js, user) == ("denied", "ReservedSelectorKey"), user


def test_a_trainjob_is_reviewed_by_the_trainjob_rules_and_denied_as_a_trainjob() -> None:
    good = parse_review(body(gang_trainjob()))
    assert good.kind.kind == "TrainJob"
    assert decide(good, S) == Decision("allowed", "Valid")
    req = parse_review(body(gang_trainjob(count=3)))
    decision = decide(req, S)
    assert (decision.verdict, decision.reason) == ("denied", "CountMismatch")
    status = build_response(req, decision)["response"]["status"]
    assert status["message"].startswith(
        "TrainJob default/allreduce-trainjob has 1 invalid gang setting"
    )
    assert "must equal spec.trainer.numNodes (4)" in status["message"]
    assert (status["details"]["group"], status["details"]["kind"]) == (
        "trainer.kubeflow.org",
        "trainjobs",
    )


def test_only_kueue_writes_our_podsetupdate_into_a_trainjob() -> None:
    queued = gang_trainjob(patches=[runtime_patch({})], suspend=True)
    admitted = gang_trainjob(patches=[runtime_patch()], suspend=False)
    assert _decided(admitted, S.kueue_username, operation="UPDATE", old=queued) == (
        "allowed",
        "Unchanged",
    )
    assert _decided(admitted, "alice", operation="UPDATE", old=queued) == (
        "denied",
        "ReservedSelectorKey",
    )
    assert _decided(admitted, S.kueue_username) == ("denied", "ReservedSelectorKey")


def test_the_requester_decides_whether_a_trainjobs_pinned_jobset_may_be_created() -> None:
    js = trainer_jobset(pod=PINNED_POD)
    assert _decided(js, TRAINER_CONTROLLER) == ("allowed", "NotAGang")
    assert _decided(js, "alice") == ("denied", "ReservedSelectorKey")
    old = trainer_jobset(suspend=True)
    assert _decided(js, TRAINER_CONTROLLER, operation="UPDATE", old=old) == (
        "allowed",
        "NotAGang",
    )
    assert _decided(old, TRAINER_CONTROLLER, operation="UPDATE", old=js) == (
        "allowed",
        "NotAGang",
    )
    assert _decided(js, "alice", operation="UPDATE", old=old) == ("denied", "ReservedSelectorKey")


@pytest.mark.parametrize(
    ("kind", "namespace", "shown"),
    [
        pytest.param("TrainingRuntime", "team-a", "team-a/torch", id="namespaced"),
        pytest.param("ClusterTrainingRuntime", "", "torch", id="cluster"),
    ],
)
def test_a_runtime_that_claims_gang_nodes_is_denied_as_that_runtime(
    kind: str, namespace: str, shown: str
) -> None:
    pod = {"nodeSelector": {k.POOL: "pretrain-p4d"}}
    runtime: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": {"name": "torch"},
        "spec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": pod}}}}
                    ]
                }
            }
        },
    }
    raw = review(runtime, user="system:admin")
    raw["request"]["namespace"] = namespace
    req = parse_review(json.dumps(raw).encode())
    assert req.kind.kind == kind
    decision = decide(req, S)
    assert (decision.verdict, decision.reason) == ("denied", "ReservedSelectorKey")
    status = build_response(req, decision)["response"]["status"]
    assert status["message"].startswith(f"{kind} {shown} has 1 invalid gang setting")
    assert status["details"]["kind"] == f"{kind.lower()}s"
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"] = {}
    raw = review(runtime, user="system:admin")
    assert decide(parse_review(json.dumps(raw).encode()), S) == Decision("allowed", "NotAGang")

"""Pure AdmissionReview handling: parse the envelope, decide, build the reply.

A malformed request raises :class:`WebhookError` (HTTP 4xx, never a verdict);
a well-formed review of a bad Job, JobSet or TrainJob (or of a Trainer runtime that
reaches for gang nodes) yields a denial that lists every violation. Nothing here does
I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

import orjson

from atomic_gang import Findings, GangSettings, Violation, keys
from atomic_gang.errors import clip
from atomic_gang.gang_object import review, review_update
from atomic_gang.objects import MalformedJobError

API_VERSION = "admission.k8s.io/v1"
Verdict = Literal["allowed", "denied"]
OPERATIONS = ("CREATE", "UPDATE")  # what the registration sends; anything else is malformed
MAX_UID = 128  # the API server sends a 36-character UUID
# Mentions of our prefix a real review carries: the keys (13), the admitted template's
# selector and toleration, their copies in last-applied-configuration and managedFields,
# twice on UPDATE: about 100. Far more is a key storm, refused before any parsing.
MAX_PREFIX_MENTIONS = 1024
_PREFIX = keys.PREFIX.encode()


class WebhookError(Exception):
    """A request we cannot review: answered with ``status`` and a JSON error."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message

    def body(self) -> dict[str, str]:
        return {"error": self.reason, "message": self.message}


class Served(NamedTuple):
    """A kind the webhook reviews: as the object names it, and as a Status names it."""

    api_version: str
    kind: str
    group: str
    resource: str


# (group, version, kind) of request.kind -> what it is
SERVED: dict[tuple[str, str, str], Served] = {
    ("batch", "v1", "Job"): Served("batch/v1", "Job", "batch", "jobs"),
    ("jobset.x-k8s.io", "v1alpha2", "JobSet"): Served(
        "jobset.x-k8s.io/v1alpha2", "JobSet", "jobset.x-k8s.io", "jobsets"
    ),
    ("trainer.kubeflow.org", "v1alpha1", "TrainJob"): Served(
        "trainer.kubeflow.org/v1alpha1", "TrainJob", "trainer.kubeflow.org", "trainjobs"
    ),
    # No gang: their templates reach every TrainJob's pods (the Trainer copies them).
    ("trainer.kubeflow.org", "v1alpha1", "TrainingRuntime"): Served(
        "trainer.kubeflow.org/v1alpha1",
        "TrainingRuntime",
        "trainer.kubeflow.org",
        "trainingruntimes",
    ),
    ("trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime"): Served(
        "trainer.kubeflow.org/v1alpha1",
        "ClusterTrainingRuntime",
        "trainer.kubeflow.org",
        "clustertrainingruntimes",
    ),
}
JOB = SERVED[("batch", "v1", "Job")]
KINDS_SERVED = ", ".join(f"{s.api_version} {s.kind}" for s in SERVED.values())


class ReviewRequest(NamedTuple):  # NamedTuple: immutable, and the cheapest to build
    uid: str
    operation: str
    namespace: str
    name: str
    obj: Mapping[str, Any] | None
    old: Mapping[str, Any] | None
    user: str = ""
    kind: Served = JOB


class Decision(NamedTuple):
    verdict: Verdict
    reason: str
    violations: tuple[Violation, ...] = ()
    omitted: int = 0  # violations found beyond the ones listed
    warnings: tuple[str, ...] = ()


def _bad(message: str, reason: str = "BadRequest") -> WebhookError:
    return WebhookError(400, reason, message)


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _bad(f"{what} must be a JSON object")
    return value


def _served(kind: Any) -> Served | None:
    if not isinstance(kind, dict):
        return None
    return SERVED.get((kind.get("group"), kind.get("version"), kind.get("kind")))  # type: ignore[arg-type]


def _request(body: bytes) -> Mapping[str, Any]:
    """The ``request`` of a well-formed AdmissionReview envelope."""
    if body.count(_PREFIX) > MAX_PREFIX_MENTIONS:
        raise _bad(f"more than {MAX_PREFIX_MENTIONS} mentions of {keys.PREFIX}", "TooManyKeys")
    try:
        doc = orjson.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        # RecursionError: hostile nesting depth; still a bad request, never a 500.
        raise _bad(f"body is not valid JSON: {str(exc)[:200]}", "InvalidJSON") from exc
    review = _object(doc, "the body")
    if review.get("apiVersion") != API_VERSION or review.get("kind") != "AdmissionReview":
        raise _bad(f"expected kind AdmissionReview, apiVersion {API_VERSION}", "NotAReview")
    return _object(review.get("request"), "request")


def parse_review(body: bytes) -> ReviewRequest:
    """Decode and check the envelope; raise WebhookError(400) on anything off."""
    req = _request(body)
    uid = req.get("uid")
    if not isinstance(uid, str) or not uid:
        raise _bad("request.uid is missing", "MissingUID")
    if len(uid) > MAX_UID:
        raise _bad(f"request.uid is longer than {MAX_UID} characters", "MissingUID")
    served = _served(req.get("kind"))
    if served is None:
        raise _bad(f"request.kind must be one of {KINDS_SERVED}", "NotAJob")
    operation = req.get("operation")
    if not isinstance(operation, str):
        raise _bad("request.operation is missing")
    if operation not in OPERATIONS:
        raise _bad("request.operation must be CREATE or UPDATE", "UnsupportedOperation")
    obj = _object(req.get("object"), "request.object")
    if (obj.get("kind", served.kind), obj.get("apiVersion", served.api_version)) != (
        served.kind,
        served.api_version,
    ):
        raise _bad(f"request.object is not a {served.api_version} {served.kind}", "NotAJob")
    old = _object(req.get("oldObject"), "request.oldObject") if operation == "UPDATE" else None
    info = req.get("userInfo")
    return ReviewRequest(
        uid=uid,
        operation=operation,
        namespace=_text(req.get("namespace")),
        name=_text(req.get("name")),
        obj=obj,
        old=old,
        user=_text(info.get("username")) if isinstance(info, dict) else "",
        kind=served,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def decide(req: ReviewRequest, settings: GangSettings) -> Decision:
    """CREATE: validate any Job, JobSet or TrainJob that carries our keys or reaches for
    gang nodes, and any Trainer runtime that reaches for them. UPDATE: gang keys are
    immutable, and only Kueue may add gang node claims. Either way the JobSet controller
    may pin its JobSet's Jobs, and the Trainer its TrainJob's JobSet, to the gang Kueue
    admitted. The allowlists are those of the request's namespace
    (``namespaceAllowlists``)."""
    scoped = settings.for_namespace(req.namespace)
    obj = _typed(req.obj or {}, req.kind)
    try:
        if req.old is None:
            found = review(obj, scoped, namespace=req.namespace, user=req.user)
            return _verdict(found, "Valid")
        found = review_update(_typed(req.old, req.kind), obj, scoped, user=req.user)
        return _verdict(found, "Unchanged")
    except MalformedJobError as err:
        raise _bad(str(err), "MalformedJob") from err


def _typed(obj: Mapping[str, Any], kind: Served) -> Mapping[str, Any]:
    """The object naming its kind (as the API server sends it; a bare test body may not)."""
    if "kind" in obj and "apiVersion" in obj:
        return obj
    return {"apiVersion": kind.api_version, "kind": kind.kind, **obj}


def _verdict(found: Findings | None, ok: str) -> Decision:
    if found is None:
        return Decision("allowed", "NotAGang")
    if found.violations:
        v = found.violations
        return Decision("denied", v[0].reason, v, found.omitted, found.warnings)
    return Decision("allowed", ok, warnings=found.warnings)


def _display_name(req: ReviewRequest) -> str:
    name = req.name
    if not name and req.obj is not None:
        meta = req.obj.get("metadata")
        if isinstance(meta, dict):
            name = str(meta.get("name") or meta.get("generateName") or "")
    shown = f"{req.namespace}/{name}" if req.namespace else name
    return clip(shown, 2 * 253)


def denial_status(
    req: ReviewRequest, violations: tuple[Violation, ...], omitted: int = 0
) -> dict[str, Any]:
    """A denial's Status: every violation numbered in the message (what kubectl prints)
    and again as a cause with its field; past the first ones only a count. One pass:
    this is the denial's hot path."""
    parts: list[str] = []
    causes: list[dict[str, str]] = []
    for i, v in enumerate(violations, 1):
        line = v.render()
        parts.append(f"({i}) {line}")
        causes.append({"reason": v.reason, "message": line, "field": v.field})
    n = len(violations) + omitted
    head = (
        f"{req.kind.kind} {_display_name(req)} has {n} invalid gang setting{'s' if n != 1 else ''}"
    )
    more = f"; and {omitted} more" if omitted else ""
    return {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": f"{head}: {'; '.join(parts)}{more}",
        "details": {
            "group": req.kind.group,
            "kind": req.kind.resource,
            "name": clip(req.name, 253),
            "causes": causes,
        },
    }


def build_response(req: ReviewRequest, decision: Decision) -> dict[str, Any]:
    """The AdmissionReview reply for ``decision``."""
    response: dict[str, Any] = {"uid": req.uid, "allowed": decision.verdict == "allowed"}
    if decision.verdict == "denied":
        response["status"] = denial_status(req, decision.violations, decision.omitted)
    if decision.warnings:
        response["warnings"] = list(decision.warnings)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}

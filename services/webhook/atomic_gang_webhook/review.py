"""Pure AdmissionReview handling: parse the envelope, decide, build the reply.

A malformed request raises :class:`WebhookError` (HTTP 4xx, never a verdict);
a well-formed review of a bad Job yields a denial that lists every violation.
Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

import orjson

from atomic_gang import GangSettings, Violation
from atomic_gang.job import MalformedJobError, job_violations, validate_job_update

API_VERSION = "admission.k8s.io/v1"
Verdict = Literal["allowed", "denied"]


class WebhookError(Exception):
    """A request we cannot review: answered with ``status`` and a JSON error."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message

    def body(self) -> dict[str, str]:
        return {"error": self.reason, "message": self.message}


class ReviewRequest(NamedTuple):  # NamedTuple: immutable, and the cheapest to build
    uid: str
    operation: str
    namespace: str
    name: str
    obj: Mapping[str, Any] | None
    old: Mapping[str, Any] | None


class Decision(NamedTuple):
    verdict: Verdict
    reason: str
    violations: tuple[Violation, ...] = ()


def _bad(message: str, reason: str = "BadRequest") -> WebhookError:
    return WebhookError(400, reason, message)


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _bad(f"{what} must be a JSON object")
    return value


def _is_job_kind(kind: Any) -> bool:
    return (
        isinstance(kind, dict)
        and kind.get("group") == "batch"
        and kind.get("version") == "v1"
        and kind.get("kind") == "Job"
    )


def parse_review(body: bytes) -> ReviewRequest:
    """Decode and check the envelope; raise WebhookError(400) on anything off."""
    try:
        doc = orjson.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        # RecursionError: hostile nesting depth; still a bad request, never a 500.
        raise _bad(f"body is not valid JSON: {str(exc)[:200]}", "InvalidJSON") from exc
    review = _object(doc, "the body")
    if review.get("apiVersion") != API_VERSION or review.get("kind") != "AdmissionReview":
        raise _bad(f"expected kind AdmissionReview, apiVersion {API_VERSION}", "NotAReview")
    req = _object(review.get("request"), "request")
    uid = req.get("uid")
    if not isinstance(uid, str) or not uid:
        raise _bad("request.uid is missing", "MissingUID")
    if not _is_job_kind(req.get("kind")):
        raise _bad("request.kind must be batch/v1 Job", "NotAJob")
    operation = req.get("operation")
    if not isinstance(operation, str):
        raise _bad("request.operation is missing")
    obj = req.get("object")
    old = req.get("oldObject")
    if operation in ("CREATE", "UPDATE"):
        obj = _object(obj, "request.object")
        if obj.get("kind", "Job") != "Job" or obj.get("apiVersion", "batch/v1") != "batch/v1":
            raise _bad("request.object is not a batch/v1 Job", "NotAJob")
    if operation == "UPDATE":
        old = _object(old, "request.oldObject")
    ns, name = req.get("namespace", ""), req.get("name", "")
    return ReviewRequest(
        uid=uid,
        operation=operation,
        namespace=ns if isinstance(ns, str) else "",
        name=name if isinstance(name, str) else "",
        obj=obj if isinstance(obj, dict) else None,
        old=old if isinstance(old, dict) else None,
    )


def decide(req: ReviewRequest, settings: GangSettings) -> Decision:
    """CREATE: validate any Job that carries our keys. UPDATE: keys are immutable."""
    try:
        if req.operation == "CREATE" and req.obj is not None:
            found = job_violations(req.obj, settings)
            if found is None:
                return Decision("allowed", "NotAGang")
            if found:
                return Decision("denied", found[0].reason, tuple(found))
            return Decision("allowed", "Valid")
        if req.operation == "UPDATE" and req.obj is not None and req.old is not None:
            changed = validate_job_update(req.old, req.obj)
            if changed:
                return Decision("denied", changed[0].reason, tuple(changed))
            return Decision("allowed", "Unchanged")
    except MalformedJobError as err:
        raise _bad(str(err), "MalformedJob") from err
    return Decision("allowed", "NotReviewed")


def _display_name(req: ReviewRequest) -> str:
    name = req.name
    if not name and req.obj is not None:
        meta = req.obj.get("metadata")
        if isinstance(meta, dict):
            name = str(meta.get("name") or meta.get("generateName") or "")
    return f"{req.namespace}/{name}" if req.namespace else name


def denial_status(req: ReviewRequest, violations: tuple[Violation, ...]) -> dict[str, Any]:
    """A denial's Status: every violation numbered in the message (what kubectl prints)
    and again as a cause with its field. One pass: this is the denial's hot path."""
    parts: list[str] = []
    causes: list[dict[str, str]] = []
    for i, v in enumerate(violations, 1):
        line = v.render()
        parts.append(f"({i}) {line}")
        causes.append({"reason": v.reason, "message": line, "field": v.field})
    n = len(violations)
    head = f"Job {_display_name(req)} has {n} invalid gang setting{'s' if n != 1 else ''}"
    return {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": f"{head}: {'; '.join(parts)}",
        "details": {"group": "batch", "kind": "jobs", "name": req.name, "causes": causes},
    }


def build_response(req: ReviewRequest, decision: Decision) -> dict[str, Any]:
    """The AdmissionReview reply for ``decision``."""
    response: dict[str, Any] = {"uid": req.uid, "allowed": decision.verdict == "allowed"}
    if decision.verdict == "denied":
        response["status"] = denial_status(req, decision.violations)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}

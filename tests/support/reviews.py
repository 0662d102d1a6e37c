"""AdmissionReview envelopes for tests and benchmarks."""

from __future__ import annotations

import json
import uuid
from typing import Any

JOB_KIND = {"group": "batch", "version": "v1", "kind": "Job"}


def review(
    obj: Any,
    *,
    operation: str = "CREATE",
    old: Any = None,
    uid: str | None = None,
    user: str = "tester",
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": JOB_KIND,
        "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
        "operation": operation,
        "namespace": "default",
        "name": obj.get("metadata", {}).get("name", "") if isinstance(obj, dict) else "",
        "object": obj,
        "userInfo": {"username": user, "groups": ["system:authenticated"]},
        "dryRun": False,
    }
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def body(obj: Any, **kw: Any) -> bytes:
    return json.dumps(review(obj, **kw)).encode()

"""AdmissionReview envelopes for tests and benchmarks."""

from __future__ import annotations

import json
import uuid
from typing import Any

JOB_KIND = {"group": "batch", "version": "v1", "kind": "Job"}
JOBSET_KIND = {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"}
TRAINER_KINDS = {
    kind: {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": kind}
    for kind in ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
}
KINDS = {"Job": JOB_KIND, "JobSet": JOBSET_KIND, **TRAINER_KINDS}
RESOURCES = {"Job": "jobs", "JobSet": "jobsets"}


def review(
    obj: Any,
    *,
    operation: str = "CREATE",
    old: Any = None,
    uid: str | None = None,
    user: str = "tester",
    kind: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An AdmissionReview of ``obj``; its kind is ``kind`` (default: the kind the object
    names, when we review it, else a Job)."""
    if kind is None:
        named = obj.get("kind") if isinstance(obj, dict) else None
        kind = KINDS.get(named, JOB_KIND) if isinstance(named, str) else JOB_KIND
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": kind,
        "resource": {
            "group": kind["group"],
            "version": kind["version"],
            "resource": RESOURCES.get(kind["kind"], kind["kind"].lower() + "s"),
        },
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

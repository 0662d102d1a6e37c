"""Job manifests for the e2e tests: gang Jobs (valid or not) and plain Jobs."""

from __future__ import annotations

from typing import Any

from atomic_gang import keys
from atomic_gang_devstack import dev_objects as dev

VALID_GANG_ANNOTATIONS = {
    keys.COUNT: "2",
    keys.INSTANCE_TYPE: "p4d.24xlarge",
    keys.MODE: "runinstances",
    keys.REGION: "us-east-1",
    keys.AVAILABILITY_ZONES: "us-east-1a",
    keys.KEEP_WARM_TTL: "15m",
    keys.MAX_LIFETIME: "6h",
}


def _pod_template(cpu: str = "100m") -> dict[str, Any]:
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ],
        }
    }


def gang_job(
    name: str,
    namespace: str,
    *,
    annotations: dict[str, str] | None = None,
    count: int = 2,
    queue: str | None = dev.LOCAL_QUEUE,
    pool: str = "e2e-pool",
) -> dict[str, Any]:
    """A gang Job; ``annotations`` are merged over the valid set."""
    labels = {keys.POOL: pool}
    if queue:
        labels[keys.QUEUE_NAME_LABEL] = queue
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {**VALID_GANG_ANNOTATIONS, **(annotations or {})},
        },
        "spec": {
            "parallelism": count,
            "completions": count,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": _pod_template(),
        },
    }


def plain_job(name: str, namespace: str, *, node: str | None = None) -> dict[str, Any]:
    """No gang keys, no queue: Kueue and our webhook let it run as is."""
    template = _pod_template()
    if node:
        template["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"backoffLimit": 0, "template": template},
    }

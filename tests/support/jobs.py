"""Builders of test Jobs and settings shared by the test suites."""

from __future__ import annotations

import copy
from typing import Any

from atomic_gang import GangSettings, load_settings
from atomic_gang import keys as k

ROLE = "arn:aws:iam::123456789012:role/eks-gang-node-role"
OTHER_ROLE = "arn:aws:iam::123456789012:role/other-node-role"


def settings(**overrides: Any) -> GangSettings:
    base: dict[str, Any] = {
        "clusterName": "my-eks-cluster",
        "defaults": {"region": "us-east-1", "nodeRoleArn": ROLE, "keepWarmTTL": "10m"},
        "limits": {"maxGangSize": 64, "maxKeepWarmTTL": "24h"},
        "allowedInstanceTypes": ["p4d.24xlarge", "p5.*", "m5.large", "trn1.32xlarge"],
    }
    base.update(overrides)
    return load_settings(None, **base)


def gang_job(
    *,
    count: int = 4,
    annotations: dict[str, str | None] | None = None,
    labels: dict[str, str | None] | None = None,
    spec: dict[str, Any] | None = None,
    name: str = "allreduce-pretrain",
) -> dict[str, Any]:
    """The sample gang Job (as in hack/demo); ``None`` values delete a key."""
    ann: dict[str, str] = {
        k.COUNT: str(count),
        k.INSTANCE_TYPE: "p4d.24xlarge",
        k.MODE: "runinstances",
        k.REGION: "us-east-1",
        k.AVAILABILITY_ZONES: "us-east-1a",
        k.NODE_ROLE_ARN: ROLE,
        k.KEEP_WARM_TTL: "15m",
        k.MAX_LIFETIME: "6h",
    }
    lab: dict[str, str] = {k.QUEUE_NAME_LABEL: "atomic-gang-queue", k.POOL: "pretrain-p4d"}
    for src, dst in ((annotations or {}, ann), (labels or {}, lab)):
        for key, value in src.items():
            if value is None:
                dst.pop(key, None)
            else:
                dst[key] = value
    job_spec: dict[str, Any] = {
        "parallelism": count,
        "completions": count,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "trainer", "image": "trainer:latest"}],
            }
        },
    }
    job_spec.update(spec or {})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "labels": lab, "annotations": ann},
        "spec": job_spec,
    }


def plain_job(name: str = "plain") -> dict[str, Any]:
    job = gang_job(name=name)
    job["metadata"]["annotations"] = {}
    job["metadata"]["labels"] = {}
    return copy.deepcopy(job)


def one_pod_per_node(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` with the required pod anti-affinity that keeps its pods on distinct nodes."""
    name = job["metadata"]["name"]
    job["spec"]["template"]["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": name}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    return job


def gang_jobset(
    *,
    count: int = 4,
    roles: tuple[tuple[str, int, int, bool], ...] = (
        ("driver", 1, 1, False),
        ("workers", 2, 2, True),
    ),
    gang_roles: str | None = "workers",
    annotations: dict[str, str | None] | None = None,
    name: str = "allreduce-jobset",
) -> dict[str, Any]:
    """A JobSet of ``roles`` (name, replicas, parallelism, requests a GPU) with the sample
    Job's gang keys; ``gang_roles=None`` leaves the annotation out."""
    base = gang_job(count=count, annotations=annotations, name=name)
    ann = dict(base["metadata"]["annotations"])
    if gang_roles is not None:
        ann[k.GANG_ROLES] = gang_roles
    replicated = []
    for role, replicas, parallelism, gpu in roles:
        container: dict[str, Any] = {"name": role, "image": "trainer:latest"}
        if gpu:
            container["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
        replicated.append(
            {
                "name": role,
                "replicas": replicas,
                "template": {
                    "spec": {
                        "parallelism": parallelism,
                        "completions": parallelism,
                        "backoffLimit": 0,
                        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                    }
                },
            }
        )
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {**base["metadata"], "annotations": ann},
        "spec": {"replicatedJobs": replicated},
    }


JOBSET_CONTROLLER = "system:serviceaccount:jobset-system:jobset-controller-manager"
# What Kueue merges into an admitted gang role's pod template: our podSetUpdate.
PINNED_POD: dict[str, Any] = {
    "nodeSelector": {k.POOL: "pretrain-p4d", k.GROUP: "pretrain-p4d-g7"},
    "tolerations": [{"key": k.GANG_TAINT, "operator": "Equal", "value": "pretrain-p4d"}],
}


def jobset_job(
    jobset: dict[str, Any] | None = None,
    *,
    role: str = "workers",
    index: int = 0,
    pod: dict[str, Any] | None = None,
    suspend: bool = False,
) -> dict[str, Any]:
    """The Job the JobSet controller (sigs.k8s.io/jobset v0.12.0, ``constructJob``)
    makes for replica ``index`` of ``role``: the replicatedJob's Job template, JobSet's
    labels, and the JobSet as its controller owner. ``pod`` is merged into its pod spec
    (``PINNED_POD`` for the Job of an admitted gang role)."""
    js = jobset or gang_jobset()
    js_name = js["metadata"]["name"]
    (rj,) = [r for r in js["spec"]["replicatedJobs"] if r["name"] == role]
    name = f"{js_name}-{role}-{index}"
    labels = {
        "jobset.sigs.k8s.io/jobset-name": js_name,
        "jobset.sigs.k8s.io/replicatedjob-name": role,
        "jobset.sigs.k8s.io/job-index": str(index),
        "jobset.sigs.k8s.io/restart-attempt": "0",
    }
    spec = copy.deepcopy(rj["template"]["spec"])
    spec["suspend"] = suspend
    spec["template"].setdefault("metadata", {})["labels"] = dict(labels)
    spec["template"]["spec"].update(copy.deepcopy(pod or {}))
    owner = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": js_name,
        "uid": "6f1c2a4e-0b7d-4c1e-9a53-2d8e1f0c7b11",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": labels,
            "annotations": dict(labels),
            "ownerReferences": [owner],
        },
        "spec": spec,
    }


TRAINER_CONTROLLER = "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"
KUEUE_PATCH = "kueue.x-k8s.io/manager"  # the manager of the runtime patch Kueue writes


def runtime_patch(
    roles: dict[str, dict[str, Any]] | None = None, *, manager: str = KUEUE_PATCH
) -> dict[str, Any]:
    """A TrainJob runtime patch whose replicatedJob ``roles`` (name -> pod spec patch)
    merge into the runtime's templates; by default Kueue's admission of the trainer
    nodes (``PINNED_POD`` for ``node``), as Kueue v0.19.1 writes our podSetUpdates."""
    roles = {"node": PINNED_POD} if roles is None else roles
    return {
        "manager": manager,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": role,
                            "template": {"spec": {"template": {"spec": copy.deepcopy(pod)}}},
                        }
                        for role, pod in roles.items()
                    ]
                }
            }
        },
    }


def gang_trainjob(
    *,
    count: int = 4,
    num_nodes: int | None = 4,
    gpus: bool = True,
    annotations: dict[str, str | None] | None = None,
    labels: dict[str, str | None] | None = None,
    patches: list[dict[str, Any]] | None = None,
    suspend: bool | None = None,
    name: str = "allreduce-trainjob",
) -> dict[str, Any]:
    """A TrainJob on the torch runtime (``torch-distributed``) with the sample Job's gang
    keys: ``num_nodes`` trainer nodes (None leaves numNodes to the runtime), each asking
    for 8 GPUs when ``gpus``; ``None`` values in ``annotations``/``labels`` delete a key."""
    base = gang_job(count=count, annotations=annotations, labels=labels, name=name)
    trainer: dict[str, Any] = {"image": "trainer:latest"}
    if num_nodes is not None:
        trainer["numNodes"] = num_nodes
    if gpus:
        trainer["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": "8"}}
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer}
    if patches is not None:
        spec["runtimePatches"] = copy.deepcopy(patches)
    if suspend is not None:
        spec["suspend"] = suspend
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": copy.deepcopy(base["metadata"]),
        "spec": spec,
    }


def trainer_jobset(
    trainjob: dict[str, Any] | None = None,
    *,
    pod: dict[str, Any] | None = None,
    suspend: bool = False,
) -> dict[str, Any]:
    """The JobSet the Kubeflow Trainer (v2.2.1, the jobset plugin's ``Build``) applies for
    a TrainJob on the torch runtime: named after it, labels and annotations from the
    runtime's and the patches' JobSet metadata (none here, so none of the TrainJob's),
    one ``node`` replicatedJob of 1 replica × numNodes pods, the TrainJob as its
    controller owner. ``pod`` is merged into its pod spec (``PINNED_POD`` once Kueue
    admitted the TrainJob and patched it with our podSetUpdate)."""
    tj = trainjob or gang_trainjob()
    nodes = tj["spec"].get("trainer", {}).get("numNodes", 1)
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "node", "image": "trainer:latest"}],
        **copy.deepcopy(pod or {}),
    }
    owner = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "name": tj["metadata"]["name"],
        "uid": "0c6b3e52-6d2f-4f4e-8a51-7e0d9b2c4a10",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": tj["metadata"]["name"],
            "namespace": "default",
            "ownerReferences": [owner],
        },
        "spec": {
            "suspend": suspend,
            "replicatedJobs": [
                {
                    "name": "node",
                    "replicas": 1,
                    "template": {
                        "metadata": {
                            "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                        },
                        "spec": {
                            "parallelism": nodes,
                            "completions": nodes,
                            "template": {"spec": pod_spec},
                        },
                    },
                }
            ],
        },
    }

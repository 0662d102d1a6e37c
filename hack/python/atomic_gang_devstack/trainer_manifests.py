"""Kubeflow Trainer's install manifests for running its controller outside the cluster.

Read from the module's ``manifests`` (the kustomize tree its release manifests are built
from): the CRDs of ``base/crds``, the manager's ClusterRole and ServiceAccount of
``base/rbac``, the webhook configurations of ``base/webhook`` with their kustomize
patches applied and every webhook pointed at a URL on 127.0.0.1, the manager's
Configuration of ``base/manager``, and the ``torch-distributed`` runtime of
``base/runtimes`` with the image tags of ``overlays/runtimes``. Names follow
``overlays/manager``: namespace ``kubeflow-system``, so the controller's identity is the
one a release install gives it (:data:`USERNAME`).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from atomic_gang_devstack import kueue_manifests as km
from atomic_gang_devstack.jobset_manifests import json_patch

NAMESPACE = "kubeflow-system"  # overlays/manager's namespace
SERVICE_ACCOUNT = "kubeflow-trainer-controller-manager"  # base/rbac/service_account.yaml
# Who the Trainer controller's requests come from: the user that creates a TrainJob's JobSet.
USERNAME = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}")
CLUSTER_ROLE = "kubeflow-trainer-controller-manager"
CRD_NAMES = (
    "clustertrainingruntimes.trainer.kubeflow.org",
    "trainingruntimes.trainer.kubeflow.org",
    "trainjobs.trainer.kubeflow.org",
)
# The ClusterTrainingRuntimes the stack installs: the release's torch runtime as shipped,
# and one derived from it whose trainer nodes wait for a dataset initializer.
TORCH_RUNTIME = "torch-distributed"
TORCH_WITH_INITIALIZER_RUNTIME = "torch-distributed-with-initializer"
RUNTIMES = (TORCH_RUNTIME, TORCH_WITH_INITIALIZER_RUNTIME)
TRAINER_ROLE = "node"  # the replicatedJob of the trainer nodes in both runtimes
INITIALIZER_ROLE = "dataset-initializer"
# The webhook paths the manager serves once its webhooks are set up, each with an
# operation its handler allows without reading an object (controller-runtime's defaulter
# skips DELETE, its validator CONNECT), and the resource it reviews: a readiness probe
# that logs no error.
WEBHOOK_PROBES: dict[str, tuple[str, str]] = {
    "/mutate-trainer-kubeflow-org-v1alpha1-trainjob": ("DELETE", "trainjobs"),
    "/validate-trainer-kubeflow-org-v1alpha1-trainjob": ("CONNECT", "trainjobs"),
    "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime": ("CONNECT", "trainingruntimes"),
    "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime": (
        "CONNECT",
        "clustertrainingruntimes",
    ),
}

Obj = dict[str, Any]


def _base(src: Path) -> Path:
    return src / "manifests" / "base"


def _docs(path: Path) -> list[Obj]:
    return [
        d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader) if d
    ]


def crds(src: Path) -> list[Obj]:
    """Every CRD of ``manifests/base/crds`` (trainjobs and both runtime kinds)."""
    paths = sorted((_base(src) / "crds").glob("*.yaml"))
    return [d for p in paths for d in _docs(p) if d.get("kind") == "CustomResourceDefinition"]


def rbac(src: Path) -> list[Obj]:
    """The namespace, the manager's ServiceAccount, its ClusterRole and the binding between
    them (``rbac/service_account.yaml``, ``rbac/role.yaml`` and ``rbac/role_binding.yaml``,
    the binding's subject in the namespace as kustomize puts it). The public ConfigMap's
    Role is for the Trainer SDK, not the controller, and is left out."""
    d = _base(src) / "rbac"
    (sa,) = _docs(d / "service_account.yaml")
    sa["metadata"]["namespace"] = NAMESPACE
    docs = _docs(d / "role.yaml") + _docs(d / "role_binding.yaml")
    for doc in docs:
        for subject in doc.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount":
                subject["namespace"] = NAMESPACE
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    return [ns, sa, *docs]


def webhooks(src: Path, *, base_url: str, ca_pem: bytes) -> list[Obj]:
    """The mutating and validating webhook configurations of ``webhook/manifests.yaml``
    with the patches of ``webhook/kustomization.yaml`` applied (the release names
    ``defaulter.trainer.kubeflow.org`` and ``validator.trainer.kubeflow.org``), pointed at
    ``base_url``."""
    wh = _base(src) / "webhook"
    docs = _docs(wh / "manifests.yaml")
    kustomization = yaml.safe_load((wh / "kustomization.yaml").read_text(encoding="utf-8"))
    for patch in kustomization.get("patches") or []:
        ops = yaml.safe_load((wh / patch["path"]).read_text(encoding="utf-8"))
        for doc in docs:
            if doc["kind"] == patch["target"]["kind"]:
                json_patch(doc, ops)
    return km.point_at(docs, base_url=base_url, ca_pem=ca_pem)


def manager_config(src: Path, *, health_port: int, webhook_port: int) -> Obj:
    """The release's ``config.trainer.kubeflow.org/v1alpha1`` Configuration
    (``manager/controller_manager_config.yaml``: its controller concurrency kept, and its
    status server's settings, a server that only the alpha ``TrainJobStatus`` gate, off by
    default, starts) for a local manager: cert management off (its rotator keeps
    certificates under a fixed /tmp path for a Service name), webhook and health on
    127.0.0.1, no leader election, no metrics. The webhook server reads its certificate
    from ``$TMPDIR/k8s-webhook-server/serving-certs`` (controller-runtime's default; the
    Configuration has no field for it)."""
    (cfg,) = _docs(_base(src) / "manager" / "controller_manager_config.yaml")
    cfg["health"] = {**cfg.get("health", {}), "healthProbeBindAddress": f"127.0.0.1:{health_port}"}
    cfg["metrics"] = {"bindAddress": "0"}
    cfg["webhook"] = {"host": "127.0.0.1", "port": webhook_port}
    cfg["leaderElection"] = {"leaderElect": False}
    cfg["certManagement"] = {"enable": False}
    return cfg


def _image_tags(src: Path) -> dict[str, str]:
    """``overlays/runtimes``'s image name -> tag (kustomize's ``images`` transform)."""
    path = src / "manifests" / "overlays" / "runtimes" / "kustomization.yaml"
    kustomization = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {i["name"]: i["newTag"] for i in kustomization.get("images") or []}


def _retag(runtime: Obj, tags: dict[str, str]) -> Obj:
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        for container in job["template"]["spec"]["template"]["spec"]["containers"]:
            if container["image"] in tags:
                container["image"] = f"{container['image']}:{tags[container['image']]}"
    return runtime


def _replicated_job(runtime: Obj, name: str) -> Obj:
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    return next(j for j in jobs if j["name"] == name)


def runtimes(src: Path) -> list[Obj]:
    """The ClusterTrainingRuntimes of :data:`RUNTIMES`. ``torch-distributed`` is
    ``runtimes/torch_distributed.yaml`` as shipped; ``torch-distributed-with-initializer``
    is the same runtime with the ``dataset-initializer`` step of the release's torchtune
    runtime (``runtimes/torchtune/llama3_2/llama3_2_1B.yaml``) before its trainer nodes,
    which depend on it as torchtune's do. The step's volume mount is dropped: its
    ReadWriteOnce claim has no provisioner on the stack, and its pod only has to run."""
    d = _base(src) / "runtimes"
    (torch,) = _docs(d / "torch_distributed.yaml")
    (torchtune,) = _docs(d / "torchtune" / "llama3_2" / "llama3_2_1B.yaml")
    initializer = copy.deepcopy(_replicated_job(torchtune, INITIALIZER_ROLE))
    for container in initializer["template"]["spec"]["template"]["spec"]["containers"]:
        container.pop("volumeMounts", None)
    derived = copy.deepcopy(torch)
    derived["metadata"]["name"] = TORCH_WITH_INITIALIZER_RUNTIME
    node = _replicated_job(derived, TRAINER_ROLE)
    node["dependsOn"] = [{"name": INITIALIZER_ROLE, "status": "Complete"}]
    derived["spec"]["template"]["spec"]["replicatedJobs"] = [initializer, node]
    tags = _image_tags(src)
    return [_retag(torch, tags), _retag(derived, tags)]


def probe_review(path: str) -> Obj:
    """An AdmissionReview for a path of :data:`WEBHOOK_PROBES`."""
    operation, resource = WEBHOOK_PROBES[path]
    kind = {
        "trainjobs": "TrainJob",
        "trainingruntimes": "TrainingRuntime",
        "clustertrainingruntimes": "ClusterTrainingRuntime",
    }[resource]
    gv = {"group": "trainer.kubeflow.org", "version": "v1alpha1"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "devstack-probe",
            "operation": operation,
            "kind": {**gv, "kind": kind},
            "resource": {**gv, "resource": resource},
        },
    }

"""Kubeflow Trainer's manifests for a local controller: read from its kustomize tree,
patched as kustomize would, in its release's namespace, pointed at 127.0.0.1, and the
runtimes the stack installs."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from atomic_gang_devstack import trainer_manifests as tm

WEBHOOKS = """\
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-trainer-kubeflow-org-v1alpha1-trainjob
  name: defaulter.trainjob.trainer.kubeflow.org
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime
  name: validator.clustertrainingruntime.trainer.kubeflow.org
- clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /validate-trainer-kubeflow-org-v1alpha1-trainingruntime
  name: validator.trainingruntime.trainer.kubeflow.org
- clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /validate-trainer-kubeflow-org-v1alpha1-trainjob
  name: validator.trainjob.trainer.kubeflow.org
"""
KUSTOMIZATION = """\
resources: [manifests.yaml]
patches:
- path: patch_mutating.yaml
  target: {group: admissionregistration.k8s.io, version: v1, kind: MutatingWebhookConfiguration}
- path: patch_validating.yaml
  target: {group: admissionregistration.k8s.io, version: v1, kind: ValidatingWebhookConfiguration}
"""
PATCH_MUTATING = """\
- {op: replace, path: /metadata/name, value: defaulter.trainer.kubeflow.org}
"""
PATCH_VALIDATING = """\
- {op: replace, path: /metadata/name, value: validator.trainer.kubeflow.org}
"""
ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kubeflow-trainer-controller-manager
rules:
- apiGroups: [jobset.x-k8s.io]
  resources: [jobsets]
  verbs: [create]
"""
ROLE_BINDING = """\
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kubeflow-trainer-controller-manager
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kubeflow-trainer-controller-manager
subjects:
  - kind: ServiceAccount
    name: kubeflow-trainer-controller-manager
"""
SERVICE_ACCOUNT = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kubeflow-trainer-controller-manager
"""
CONFIG = """\
apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health: {healthProbeBindAddress: ":8081", readinessEndpointName: readyz}
metrics: {bindAddress: ":8443", secureServing: true}
webhook: {port: 9443, host: ""}
leaderElection: {leaderElect: true, resourceName: trainer.kubeflow.org}
controller:
  groupKindConcurrency: {TrainJob.trainer.kubeflow.org: 5}
certManagement: {enable: true, webhookServiceName: x, webhookSecretName: y}
"""
TORCH = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torch-distributed
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers:
                    - {name: node, image: pytorch/pytorch:2.10.0}
"""
TORCHTUNE = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torchtune-llama3.2-1b
spec:
  template:
    spec:
      replicatedJobs:
        - name: dataset-initializer
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}
            spec:
              template:
                spec:
                  containers:
                    - name: dataset-initializer
                      image: ghcr.io/kubeflow/trainer/dataset-initializer
                      env: [{name: STORAGE_URI, value: "hf://tatsu-lab/alpaca"}]
                      volumeMounts: [{mountPath: /workspace, name: initializer}]
        - name: model-initializer
          template:
            spec:
              template:
                spec:
                  containers:
                    - {name: model-initializer, image: ghcr.io/kubeflow/trainer/model-initializer}
"""
RUNTIME_IMAGES = """\
resources: [../../base/runtimes]
images:
  - {name: ghcr.io/kubeflow/trainer/dataset-initializer, newTag: v2.2.1}
  - {name: ghcr.io/kubeflow/trainer/torchtune-trainer, newTag: v2.2.1}
"""


def _crd(name: str) -> str:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}
    return yaml.safe_dump({**crd, "metadata": {"name": name}})


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """A Trainer module tree with the files the builders read."""
    files = {
        "base/webhook/manifests.yaml": WEBHOOKS,
        "base/webhook/kustomization.yaml": KUSTOMIZATION,
        "base/webhook/patch_mutating.yaml": PATCH_MUTATING,
        "base/webhook/patch_validating.yaml": PATCH_VALIDATING,
        "base/rbac/role.yaml": ROLE,
        "base/rbac/role_binding.yaml": ROLE_BINDING,
        "base/rbac/service_account.yaml": SERVICE_ACCOUNT,
        "base/manager/controller_manager_config.yaml": CONFIG,
        "base/runtimes/torch_distributed.yaml": TORCH,
        "base/runtimes/torchtune/llama3_2/llama3_2_1B.yaml": TORCHTUNE,
        "overlays/runtimes/kustomization.yaml": RUNTIME_IMAGES,
        **{f"base/crds/trainer.kubeflow.org_{n.split('.')[0]}.yaml": _crd(n) for n in tm.CRD_NAMES},
        "base/crds/kustomization.yaml": "resources: []\n",
    }
    for rel, text in files.items():
        path = tmp_path / "manifests" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_controller_acts_as_the_release_service_account() -> None:
    assert (
        tm.USERNAME == "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"
    )
    assert tm.GROUPS == ("system:serviceaccounts", "system:serviceaccounts:kubeflow-system")


def test_crds_come_from_the_bases(src: Path) -> None:
    assert sorted(c["metadata"]["name"] for c in tm.crds(src)) == sorted(tm.CRD_NAMES)


def test_rbac_binds_the_release_role_to_the_service_account_in_its_namespace(src: Path) -> None:
    ns, sa, role, binding = tm.rbac(src)
    assert ns["metadata"] == {"name": "kubeflow-system"}
    assert sa["metadata"] == {
        "name": "kubeflow-trainer-controller-manager",
        "namespace": "kubeflow-system",
    }
    assert role["metadata"] == {"name": tm.CLUSTER_ROLE}
    assert role["rules"][0]["resources"] == ["jobsets"]
    assert binding["roleRef"]["name"] == tm.CLUSTER_ROLE
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "kubeflow-trainer-controller-manager",
            "namespace": "kubeflow-system",
        }
    ]


def test_webhooks_keep_their_release_names_and_point_at_the_local_process(src: Path) -> None:
    mutating, validating = tm.webhooks(src, base_url="https://127.0.0.1:4321", ca_pem=b"PEM")
    assert mutating["metadata"]["name"] == "defaulter.trainer.kubeflow.org"
    assert validating["metadata"]["name"] == "validator.trainer.kubeflow.org"
    bundle = base64.b64encode(b"PEM").decode()
    configs = [h["clientConfig"] for d in (mutating, validating) for h in d["webhooks"]]
    assert all(set(c) == {"url", "caBundle"} and c["caBundle"] == bundle for c in configs)
    # Readiness probes every path the apiserver calls, each with an operation its
    # handler allows without an object.
    assert {c["url"] for c in configs} == {f"https://127.0.0.1:4321{p}" for p in tm.WEBHOOK_PROBES}
    reviews = [tm.probe_review(p)["request"] for p in tm.WEBHOOK_PROBES]
    assert [(r["operation"], r["kind"]["kind"]) for r in reviews] == [
        ("DELETE", "TrainJob"),
        ("CONNECT", "TrainJob"),
        ("CONNECT", "TrainingRuntime"),
        ("CONNECT", "ClusterTrainingRuntime"),
    ]


def test_manager_config_is_the_release_one_run_out_of_cluster(src: Path) -> None:
    cfg = tm.manager_config(src, health_port=1, webhook_port=2)
    assert cfg["apiVersion"] == "config.trainer.kubeflow.org/v1alpha1"
    assert cfg["certManagement"] == {"enable": False}
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 2}
    assert cfg["metrics"] == {"bindAddress": "0"}
    assert cfg["health"] == {
        "healthProbeBindAddress": "127.0.0.1:1",
        "readinessEndpointName": "readyz",
    }
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["controller"] == {"groupKindConcurrency": {"TrainJob.trainer.kubeflow.org": 5}}
    yaml.safe_dump(cfg)  # plain data


def test_runtimes_torch_as_shipped_and_one_with_a_dataset_initializer(src: Path) -> None:
    torch, derived = tm.runtimes(src)
    assert torch == yaml.safe_load(TORCH)  # untagged images are not in overlays/runtimes
    assert [r["metadata"]["name"] for r in (torch, derived)] == list(tm.RUNTIMES)
    assert derived["spec"]["mlPolicy"] == torch["spec"]["mlPolicy"]
    initializer, node = derived["spec"]["template"]["spec"]["replicatedJobs"]
    assert (initializer["name"], node["name"]) == (tm.INITIALIZER_ROLE, tm.TRAINER_ROLE)
    (container,) = initializer["template"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/kubeflow/trainer/dataset-initializer:v2.2.1"
    assert "volumeMounts" not in container  # its claim would never bind on the stack
    assert node["dependsOn"] == [{"name": "dataset-initializer", "status": "Complete"}]
    assert {k: v for k, v in node.items() if k != "dependsOn"} == (
        torch["spec"]["template"]["spec"]["replicatedJobs"][0]
    )

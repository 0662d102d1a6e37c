"""JobSet's manifests for a local controller: read from its kustomize tree, patched as
kustomize would, renamed as its release is, and pointed at 127.0.0.1."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from atomic_gang_devstack import jobset_manifests as jm

MANIFESTS = """\
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
      path: /mutate-jobset-x-k8s-io-v1alpha2-jobset
  name: mjobset.kb.io
- clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
  name: mpod.kb.io
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
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
  name: vjobset.kb.io
"""
KUSTOMIZATION = """\
resources: [manifests.yaml, service.yaml]
patches:
- path: patches/mutating-patch.yaml
  target: {kind: MutatingWebhookConfiguration, name: mutating-webhook-configuration}
"""
PATCH = """\
- op: replace
  path: /webhooks/1
  value:
    clientConfig:
      service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
    name: mpod.kb.io
    objectSelector:
      matchExpressions: [{key: jobset.sigs.k8s.io/jobset-name, operator: Exists}]
"""
ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: manager-role
rules:
- apiGroups: [batch]
  resources: [jobs]
  verbs: [create]
"""


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """A JobSet module tree with the files the builders read."""
    comps = tmp_path / "config" / "components"
    for rel, text in {
        "webhook/manifests.yaml": MANIFESTS,
        "webhook/kustomization.yaml": KUSTOMIZATION,
        "webhook/patches/mutating-patch.yaml": PATCH,
        "rbac/role.yaml": ROLE,
        "crd/bases/jobset.x-k8s.io_jobsets.yaml": (
            "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            f"metadata: {{name: {jm.CRD_NAME}}}\n"
        ),
    }.items():
        (comps / rel).parent.mkdir(parents=True, exist_ok=True)
        (comps / rel).write_text(text, encoding="utf-8")
    return tmp_path


def test_the_controller_acts_as_the_release_service_account() -> None:
    assert jm.USERNAME == "system:serviceaccount:jobset-system:jobset-controller-manager"
    assert jm.GROUPS == ("system:serviceaccounts", "system:serviceaccounts:jobset-system")


def test_rbac_binds_the_release_role_to_the_service_account(src: Path) -> None:
    ns, sa, role, binding = jm.rbac(src)
    assert ns["metadata"] == {"name": "jobset-system"}
    assert sa["metadata"] == {"name": "jobset-controller-manager", "namespace": "jobset-system"}
    assert role["metadata"] == {"name": "jobset-manager-role"}
    assert role["rules"] == [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}]
    assert binding["roleRef"]["name"] == "jobset-manager-role"
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "jobset-controller-manager",
            "namespace": "jobset-system",
        }
    ]


def test_webhooks_are_patched_renamed_and_pointed_at_the_local_process(src: Path) -> None:
    mutating, validating = jm.webhooks(src, base_url="https://127.0.0.1:4321", ca_pem=b"PEM")
    bundle = base64.b64encode(b"PEM").decode()
    assert mutating["metadata"]["name"] == "jobset-mutating-webhook-configuration"
    assert validating["metadata"]["name"] == "jobset-validating-webhook-configuration"
    assert [h["clientConfig"] for h in mutating["webhooks"]] == [
        {
            "url": "https://127.0.0.1:4321/mutate-jobset-x-k8s-io-v1alpha2-jobset",
            "caBundle": bundle,
        },
        {"url": "https://127.0.0.1:4321/mutate--v1-pod", "caBundle": bundle},
    ]
    pod_hook = mutating["webhooks"][1]
    assert pod_hook["objectSelector"]["matchExpressions"][0]["key"] == (
        "jobset.sigs.k8s.io/jobset-name"
    )
    assert "objectSelector" not in validating["webhooks"][0]
    # Readiness probes the JobSet paths the apiserver calls, with operations the
    # handlers allow without an object.
    urls = {h["clientConfig"]["url"] for d in (mutating, validating) for h in d["webhooks"]}
    assert {f"https://127.0.0.1:4321{p}" for p in jm.JOBSET_WEBHOOK_PROBES} <= urls
    assert [jm.probe_review(op)["request"]["operation"] for op in ("DELETE", "CONNECT")] == [
        "DELETE",
        "CONNECT",
    ]


def test_crds_come_from_the_bases(src: Path) -> None:
    assert [c["metadata"]["name"] for c in jm.crds(src)] == [jm.CRD_NAME]


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        pytest.param(
            [{"op": "replace", "path": "/a/1", "value": "X"}], {"a": [0, "X", 2]}, id="replace"
        ),
        pytest.param([{"op": "add", "path": "/a/-", "value": 3}], {"a": [0, 1, 2, 3]}, id="append"),
        pytest.param([{"op": "remove", "path": "/a/0"}], {"a": [1, 2]}, id="remove"),
        pytest.param(
            [{"op": "add", "path": "/b~1c", "value": 1}], {"a": [0, 1, 2], "b/c": 1}, id="escaped"
        ),
    ],
)
def test_json_patch(ops: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    doc: dict[str, Any] = {"a": [0, 1, 2]}
    jm.json_patch(doc, ops)
    assert doc == expected


def test_json_patch_refuses_what_it_does_not_implement() -> None:
    with pytest.raises(ValueError, match="'move'"):
        jm.json_patch({"a": 1}, [{"op": "move", "from": "/a", "path": "/b"}])


def test_manager_config_runs_out_of_cluster_on_our_certificates() -> None:
    cfg = jm.manager_config(health_port=1, webhook_port=2, cert_dir=Path("/x/certs"))
    assert cfg["apiVersion"] == "config.jobset.x-k8s.io/v1alpha1"
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 2, "certDir": "/x/certs"}
    assert cfg["metrics"] == {"bindAddress": "0", "certDir": "/x/certs"}
    assert cfg["health"] == {"healthProbeBindAddress": "127.0.0.1:1"}
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert "clientConnection" not in cfg  # JobSet's own default
    assert jm.manager_config(health_port=1, webhook_port=2, cert_dir=Path("/c"), qps=40)[
        "clientConnection"
    ] == {"qps": 40, "burst": 80}
    yaml.safe_dump(cfg)  # plain data

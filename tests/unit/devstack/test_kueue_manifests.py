"""Rewriting Kueue's rendered chart for a manager outside the cluster."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from atomic_gang_devstack import kueue_manifests as km


def _svc(path: str) -> dict[str, Any]:
    return {"service": {"name": "kueue-webhook-service", "namespace": "kueue-system", "path": path}}


def _chart_output() -> list[dict[str, Any]]:
    return [
        {"kind": "Deployment", "metadata": {"name": "kueue-controller-manager"}},
        {"kind": "APIService", "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"}},
        {"kind": "Service", "metadata": {"name": "kueue-webhook-service"}},
        {"kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert"}},
        {"kind": "ClusterRole", "metadata": {"name": "kueue-manager-role"}},
        {
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "kueue-mutating-webhook-configuration"},
            "webhooks": [
                {"name": "mjob.kb.io", "clientConfig": _svc("/mutate-batch-v1-job")},
                {"name": "mpod.kb.io", "clientConfig": _svc("/mutate--v1-pod")},
            ],
        },
        {
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "workloads.kueue.x-k8s.io"},
            "spec": {
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {"clientConfig": _svc("/convert")},
                }
            },
        },
        {
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "topologies.kueue.x-k8s.io"},
            "spec": {},
        },
    ]


def test_select_keeps_only_what_a_local_manager_needs_crds_first() -> None:
    kinds = [d["kind"] for d in km.select(_chart_output())]
    assert kinds == [
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "ClusterRole",
        "MutatingWebhookConfiguration",
    ]


def test_point_at_rewrites_webhooks_and_conversion_to_urls() -> None:
    docs = km.point_at(
        km.select(_chart_output()), base_url="https://127.0.0.1:4321/", ca_pem=b"PEM"
    )
    bundle = base64.b64encode(b"PEM").decode()
    hooks = next(d for d in docs if d["kind"] == "MutatingWebhookConfiguration")["webhooks"]
    assert [h["clientConfig"] for h in hooks] == [
        {"url": "https://127.0.0.1:4321/mutate-batch-v1-job", "caBundle": bundle},
        {"url": "https://127.0.0.1:4321/mutate--v1-pod", "caBundle": bundle},
    ]
    wl = next(d for d in docs if d["metadata"]["name"] == "workloads.kueue.x-k8s.io")
    assert wl["spec"]["conversion"]["webhook"]["clientConfig"] == {
        "url": "https://127.0.0.1:4321/convert",
        "caBundle": bundle,
    }
    topo = next(d for d in docs if d["metadata"]["name"] == "topologies.kueue.x-k8s.io")
    assert topo["spec"] == {}


def test_manager_config_runs_out_of_cluster() -> None:
    cfg = km.manager_config(health_port=1, webhook_port=2, cert_dir=Path("/x/certs"))
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 2, "certDir": "/x/certs"}
    assert cfg["health"]["healthProbeBindAddress"] == "127.0.0.1:1"
    assert cfg["integrations"]["frameworks"] == ["batch/job"]
    assert cfg["internalCertManagement"]["enable"] is True
    assert cfg["waitForPodsReady"]["timeout"]
    assert cfg["clientConnection"] == {"qps": 50, "burst": 100}  # Kueue's own default


CHART_VALUES = """\
managerConfig:
  controllerManagerConfigYaml: |-
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    controller:
      groupKindConcurrency:
        Job.batch: 5
        Workload.kueue.x-k8s.io: 5
        ClusterQueue.kueue.x-k8s.io: 1
"""


def test_kueue_reconciles_as_many_objects_at_once_as_its_chart_ships(tmp_path: Path) -> None:
    """Without the chart's groupKindConcurrency every Kueue controller reconciles one
    object at a time: a hundred admitted Jobs then waited ~30 s to be let run."""
    (tmp_path / "values.yaml").write_text(CHART_VALUES)
    shipped = km.chart_concurrency(tmp_path)
    assert shipped == {
        "Job.batch": 5,
        "Workload.kueue.x-k8s.io": 5,
        "ClusterQueue.kueue.x-k8s.io": 1,
    }
    cfg = km.manager_config(health_port=1, webhook_port=2, cert_dir=tmp_path, concurrency=shipped)
    assert cfg["controller"] == {"groupKindConcurrency": shipped}
    assert "controller" not in km.manager_config(health_port=1, webhook_port=2, cert_dir=tmp_path)


def test_seeded_secret_has_the_four_keys_the_rotator_reads() -> None:
    secret = km.seeded_secret(ca_crt=b"a", ca_key=b"b", tls_crt=b"c", tls_key=b"d")
    assert secret["metadata"] == {"name": km.SECRET_NAME, "namespace": km.NAMESPACE}
    assert {k: base64.b64decode(v) for k, v in secret["data"].items()} == {
        "ca.crt": b"a",
        "ca.key": b"b",
        "tls.crt": b"c",
        "tls.key": b"d",
    }

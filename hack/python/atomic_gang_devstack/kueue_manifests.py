"""Kueue's install manifests for running its manager outside the cluster.

The chart from Kueue's module zip is rendered with our pinned helm, with the
same manager configuration we run. From the output we keep CRDs, RBAC and the
webhook configurations, drop what needs a pod (Deployment, Services,
APIServices, ...), and point every webhook and CRD conversion webhook at a URL
on 127.0.0.1 instead of the in-cluster Service.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

NAMESPACE = "kueue-system"
RELEASE = "kueue"
SERVICE_NAME = "kueue-webhook-service"
SECRET_NAME = "kueue-webhook-server-cert"  # noqa: S105 - a name, not a secret
SERVICE_ACCOUNT = "kueue-controller-manager"
# The cert rotator's CA must carry this DNS name (open-policy-agent/cert-controller).
CA_NAME = "kueue-ca"
SERVICE_DNS = f"{SERVICE_NAME}.{NAMESPACE}.svc"

KEEP_KINDS = frozenset(
    {
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
)
WEBHOOK_KINDS = frozenset({"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})

Obj = dict[str, Any]
DEFAULT_QPS = 50  # between Kueue v0.18's own default (20) and v0.19's (300): both versions alike


def chart_concurrency(chart: Path) -> dict[str, int]:
    """The reconciles per kind Kueue's chart ships in its manager configuration
    (``controller.groupKindConcurrency``: Job.batch 5, Workload 5, ...). A manager
    configuration without it reconciles one object of each kind at a time
    (controller-runtime's default), which no Kueue install runs with."""
    values = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8"))
    shipped = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    return {str(k): int(v) for k, v in shipped["controller"]["groupKindConcurrency"].items()}


def manager_config(
    *,
    health_port: int,
    webhook_port: int,
    cert_dir: Path,
    frameworks: Iterable[str] = ("batch/job",),
    qps: int | None = None,
    concurrency: Mapping[str, int] | None = None,
    pods_ready_timeout: str = "5m",
) -> Obj:
    """Kueue's ``config.kueue.x-k8s.io/v1beta2`` Configuration for a local manager, its API
    client allowed ``qps`` requests a second (burst twice that; unset: 50, so that every
    Kueue version runs alike), its controllers ``concurrency`` reconciles per kind
    (``chart_concurrency``)."""
    qps = qps or DEFAULT_QPS
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {
            "enable": True,
            "webhookServiceName": SERVICE_NAME,
            "webhookSecretName": SECRET_NAME,
        },
        "waitForPodsReady": {
            "timeout": pods_ready_timeout,
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60},
        },
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(frameworks)},
        "clientConnection": {"qps": qps, "burst": 2 * qps},
        **({"controller": {"groupKindConcurrency": dict(concurrency)}} if concurrency else {}),
    }


def render_chart(helm: Path, chart: Path, config: Obj) -> list[Obj]:
    """``helm template`` the chart with ``config`` as its manager configuration.

    Only the integrations and namespace selectors of ``config`` shape what we
    keep (ports and paths land in the ConfigMap, which is dropped).
    """
    values = {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config)}}
    out = subprocess.run(
        [str(helm), "template", RELEASE, str(chart), "--namespace", NAMESPACE, "--values", "-"],
        input=yaml.safe_dump(values),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return [d for d in yaml.load_all(out, Loader=yaml.CSafeLoader) if d]


def cached_render(helm: Path, chart: Path, config: Obj, cache: Path) -> list[Obj]:
    """:func:`render_chart` then :func:`select`, cached as JSON under ``cache``."""
    key = hashlib.sha256(
        json.dumps([str(helm), str(chart.resolve()), config], sort_keys=True).encode()
    ).hexdigest()[:16]
    path = cache / f"kueue-manifests-{key}.json"
    if path.exists():
        return list(json.loads(path.read_text(encoding="utf-8")))
    docs = select(render_chart(helm, chart, config))
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(docs), encoding="utf-8")
    os.replace(tmp, path)  # atomic: concurrent launchers may render at the same time
    return docs


def select(docs: Iterable[Obj]) -> list[Obj]:
    """Keep the kinds a local manager needs, CRDs first (as kubectl would order them)."""
    kept = [d for d in docs if d.get("kind") in KEEP_KINDS]
    return sorted(kept, key=lambda d: d["kind"] != "CustomResourceDefinition")


def point_at(docs: Iterable[Obj], *, base_url: str, ca_pem: bytes) -> list[Obj]:
    """Rewrite every service clientConfig (webhooks, CRD conversion) to ``base_url``+path."""
    bundle = base64.b64encode(ca_pem).decode()
    out: list[Obj] = []
    for doc in docs:
        if doc["kind"] in WEBHOOK_KINDS:
            for hook in doc.get("webhooks") or []:
                hook["clientConfig"] = _url_config(hook["clientConfig"], base_url, bundle)
        elif doc["kind"] == "CustomResourceDefinition":
            conv = doc["spec"].get("conversion") or {}
            if conv.get("strategy") == "Webhook":
                wh = conv["webhook"]
                wh["clientConfig"] = _url_config(wh["clientConfig"], base_url, bundle)
        out.append(doc)
    return out


def _url_config(cc: Obj, base_url: str, bundle: str) -> Obj:
    path = (cc.get("service") or {}).get("path") or "/"
    return {"url": base_url.rstrip("/") + path, "caBundle": bundle}


def seeded_secret(*, ca_crt: bytes, ca_key: bytes, tls_crt: bytes, tls_key: bytes) -> Obj:
    """The internal-cert Secret, pre-filled so the rotator keeps our certificates."""

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET_NAME, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {
            "ca.crt": b64(ca_crt),
            "ca.key": b64(ca_key),
            "tls.crt": b64(tls_crt),
            "tls.key": b64(tls_key),
        },
    }


def namespace() -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


def crd_names(docs: Iterable[Obj]) -> list[str]:
    return [d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"]

"""Every object the chart renders is accepted by a server-side dry-run.

The real kube-apiserver validates each object against its schema (built-in
kinds, our GangNodePool CRD, Kueue's CRDs and webhooks, cert-manager's and the
Prometheus Operator's CRDs from their module zips), for every certMode and
every optional piece.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.chart.conftest import CertManager
from tests.e2e.conftest import LocalStack
from tests.integration.chart.render import REQUIRED, merge, render

pytestmark = pytest.mark.e2e
RELEASE, NAMESPACE = "agp-dry", "agp-dry-system"
BASE = merge(
    REQUIRED,
    {
        "controllerName": "atomic-gang.k8s.aws/chart-dry-run",
        "kueue": {
            "admissionCheck": {"name": "dry-check"},
            "resourceFlavor": {"name": "dry-flavor"},
            "clusterQueue": {"name": "dry-cq", "cohort": "dry-cohort"},
            "localQueue": {"name": "dry-queue"},
        },
        "webhook": {"name": "jobs.dry-run.atomic-gang.k8s.aws"},
    },
)
CASES: dict[str, dict[str, Any]] = {
    "cert-manager": {},
    "helm": {"webhook": {"certMode": "helm"}},
    "provided": {
        "webhook": {"certMode": "provided", "provided": {"secretName": "x", "caBundle": "Q0EK"}}
    },
    "dev-url": {"webhook": {"devUrl": "https://127.0.0.1:9443"}},
    "irsa": {
        "auth": {"mode": "irsa"},
        "serviceAccount": {"roleArn": "arn:aws:iam::123456789012:role/ctl"},
    },
    "static": {"auth": {"mode": "static", "static": {"secretName": "aws"}}},
    "node": {"auth": {"mode": "node"}},
    "everything-optional": {
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True, "runbookBaseUrl": "https://example.com/ops"},
            "dashboards": {"enabled": True},
        },
        "nodeBootstrap": {"enabled": True},
        "allowedNodeRoleArns": [
            BASE["defaults"]["nodeRoleArn"],
            "arn:aws:iam::123456789012:role/second",
        ],
    },
}


@pytest.mark.parametrize("case", list(CASES))
def test_server_side_dry_run_accepts_every_object(
    case: str,
    local_stack: LocalStack,
    cert_manager: CertManager,
    service_monitor_crd: str,
    helm_binary: Path,
) -> None:
    kube = local_stack.kube
    kube.run("create", "namespace", NAMESPACE, check=False)
    r = render(
        helm_binary, merge(BASE, CASES[case]), release=RELEASE, namespace=NAMESPACE, crds=True
    )
    assert r.returncode == 0, r.stderr
    stream = "\n---\n".join(json.dumps(o) for o in r.objects)

    done = kube.run(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--field-manager=chart-dry-run",
        "-f",
        "-",
        "-o",
        "name",
        stdin=stream,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    applied = sorted(done.stdout.split())
    assert len(applied) == len(r.objects), applied
    assert (
        "customresourcedefinition.apiextensions.k8s.io/gangnodepools.atomic-gang.k8s.aws" in applied
    )
    if case == "everything-optional":
        assert f"prometheusrule.monitoring.coreos.com/{RELEASE}-alerts" in applied
        assert f"configmap/{RELEASE}-dashboard" in applied

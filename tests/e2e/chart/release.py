"""The chart release the access and lifecycle tests share: its values and its handle.

certMode=certManager (a real cert-manager issues the certificate, its
cainjector fills the caBundle) and ``webhook.devUrl`` pointing at our webhook
process on 127.0.0.1, which serves the chart's Secret as the pod would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.e2e.chart.support import WebhookProcess
from tests.e2e.kube import Kube
from tests.integration.chart.render import REQUIRED, merge

NODE_LABEL = "chart-e2e.atomic-gang.k8s.aws/node"
RELEASE, NS, JOBS_NS = "agp-e2e", "agp-e2e-system", "agp-e2e-jobs"
WEBHOOK_NAME = "jobs.chart-e2e.atomic-gang.k8s.aws"
TLS_SECRET = f"{RELEASE}-webhook-tls"
INSTANCE = f"app.kubernetes.io/instance={RELEASE}"


def chart_values(port: int) -> dict[str, Any]:
    pin = {"nodeSelector": {NODE_LABEL: "true"}}
    return merge(
        REQUIRED,
        {
            "clusterName": "atomic-gang-dev",  # the cluster the session's simulated EC2 seeds
            "controllerName": "atomic-gang.k8s.aws/chart-e2e",
            "allowedInstanceTypes": ["m5.large"],  # the dev stack's webhook also allows c5.*
            "image": {"repository": "registry.invalid/atomic-gang-provisioner"},
            "controller": pin,
            "webhook": {**pin, "name": WEBHOOK_NAME, "devUrl": f"https://127.0.0.1:{port}"},
            "kueue": {
                "admissionCheck": {"name": "chart-e2e-check"},
                "resourceFlavor": {"name": "chart-e2e-flavor"},
                "clusterQueue": {"name": "chart-e2e-cq"},
                "localQueue": {"name": "chart-e2e-queue"},
                "localQueueNamespaces": [JOBS_NS],
            },
        },
    )


@dataclass
class Release:
    helm: Any  # conftest.Helm (conftest imports this module)
    kube: Kube
    values: dict[str, Any]
    install_output: str
    webhook: WebhookProcess
    installed: bool = True

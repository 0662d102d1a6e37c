"""certMode=helm: the chart's own CA and certificate survive upgrades (``lookup``).

A regenerated pair on every upgrade would break the running webhook's trust
for no reason; the chart reuses the Secret it finds in the cluster. Without a
cainjector in the way, this release also shows the registration's
matchConditions at work.
"""

from __future__ import annotations

import base64

import pytest

from tests.e2e.chart.conftest import Helm
from tests.e2e.chart.release import NODE_LABEL
from tests.e2e.conftest import LocalStack
from tests.e2e.jobs import gang_job, plain_job
from tests.integration.chart.render import CHART, REQUIRED, merge

pytestmark = pytest.mark.e2e
RELEASE, NS, JOBS_NS = "agp-helmcert", "agp-helmcert-system", "agp-helmcert-jobs"
SECRET = f"{RELEASE}-webhook-tls"
VALUES = merge(
    REQUIRED,
    {
        "controllerName": "atomic-gang.k8s.aws/chart-helm-certs",
        "controller": {"nodeSelector": {NODE_LABEL: "true"}},
        "webhook": {
            "certMode": "helm",
            "name": "jobs.helm-certs.atomic-gang.k8s.aws",
            "nodeSelector": {NODE_LABEL: "true"},
        },
        "kueue": {
            "create": dict.fromkeys(
                ("admissionCheck", "resourceFlavor", "clusterQueue", "localQueues"), False
            )
        },
    },
)


def test_helm_generated_pair_is_kept_across_upgrades(
    local_stack: LocalStack, helm: Helm, chart_nodes: tuple[str, ...]
) -> None:
    kube = local_stack.kube
    try:
        helm.install(RELEASE, NS, VALUES)
        first = kube.get("secret", SECRET, "-n", NS)["data"]
        hook = kube.get("validatingwebhookconfiguration", f"{RELEASE}-webhook")["webhooks"][0]
        assert hook["clientConfig"]["caBundle"] == first["ca.crt"]
        assert base64.b64decode(first["tls.crt"]).startswith(b"-----BEGIN CERTIFICATE-----")

        # No webhook answers here (kwok runs no container): gang Jobs fail closed,
        # while matchConditions keep every other Job away from the webhook.
        kube.run("create", "namespace", JOBS_NS, check=False)
        gang = kube.apply(gang_job("gang", JOBS_NS), check=False)
        assert 'failed calling webhook "jobs.helm-certs.atomic-gang.k8s.aws"' in gang.stderr
        assert kube.apply(plain_job("plain", JOBS_NS)).returncode == 0

        changed = merge(VALUES, {"webhook": {"timeoutSeconds": 9}})
        helm.run("upgrade", RELEASE, str(CHART), "-n", NS, "--wait", values=changed)

        again = kube.get("secret", SECRET, "-n", NS)["data"]
        hook = kube.get("validatingwebhookconfiguration", f"{RELEASE}-webhook")["webhooks"][0]
        assert again == first
        assert hook["clientConfig"]["caBundle"] == first["ca.crt"]
        assert hook["timeoutSeconds"] == 9
    finally:
        helm.run("uninstall", RELEASE, "-n", NS, "--wait", check=False)
        kube.run("delete", "namespace", JOBS_NS, "--wait=false", check=False)
    assert kube.run("get", "secret", SECRET, "-n", NS, check=False).returncode != 0
    gone = kube.run("get", "validatingwebhookconfiguration", f"{RELEASE}-webhook", check=False)
    assert gone.returncode != 0

"""Values that used to fail only at run time now fail the install.

A second release, in a namespace of its own, with one wrong value per service:
the webhook's TLS Secret is unreadable (``certMode: provided`` pointing at a
Secret whose pair is not PEM) and the controller's AWS endpoint reaches nothing
(a closed port on the node: a missing ``AWS_ENDPOINT_URL`` would dial the real
AWS, which this machine must not). Each shows up as a pod that is not Ready
with a log line that says what is wrong, and ``helm upgrade --install --wait``
fails.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from atomic_gang_devstack.components.incluster import CHART, chart_values
from atomic_gang_devstack.components.node import node_net
from atomic_gang_devstack.waits import ComponentFailedError
from tests.e2e.cluster.conftest import Cluster, is_ready
from tests.e2e.kube import wait_for
from tests.integration.chart.render import merge

pytestmark = pytest.mark.e2e
RELEASE, NS = "agp-bad", "agp-bad-system"
BAD_TLS = "agp-bad-tls"


def _values(cluster: Cluster) -> dict[str, Any]:
    good = chart_values(cluster.ctx)
    env = [e for e in good["controller"]["extraEnv"] if e["name"] != "AWS_ENDPOINT_URL"]
    closed = f"http://{node_net(cluster.ctx).node_ip}:9"  # discard: nothing listens
    return merge(
        good,
        {
            "controllerName": "atomic-gang.k8s.aws/bad-values",
            "replicaCount": 1,
            "controller": {"extraEnv": [*env, {"name": "AWS_ENDPOINT_URL", "value": closed}]},
            "webhook": {
                "name": "jobs.bad-values.atomic-gang.k8s.aws",
                "replicaCount": 1,
                "certMode": "provided",
                "provided": {"secretName": BAD_TLS, "caBundle": base64.b64encode(b"x").decode()},
            },
            "podDisruptionBudget": {"enabled": False},
            "kueue": {
                "create": dict.fromkeys(
                    ("admissionCheck", "resourceFlavor", "clusterQueue", "localQueues"), False
                )
            },
        },
    )


def test_wrong_values_fail_helm_wait_with_unready_pods_and_clear_logs(cluster: Cluster) -> None:
    kube = cluster.kube
    kube.run("create", "namespace", NS)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": BAD_TLS, "namespace": NS},
        "stringData": {"tls.crt": "not a certificate", "tls.key": "not a key"},
    }
    kube.apply(secret)
    aws = {
        **secret,
        "metadata": {"name": "atomic-gang-aws", "namespace": NS},
        "stringData": {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"},
    }
    kube.apply(aws)
    try:
        with pytest.raises(ComponentFailedError) as failed:
            cluster.helm.run(
                "upgrade", "--install", RELEASE, str(CHART), "--namespace", NS,
                "--wait", "--timeout", "75s", values=_values(cluster),
            )  # fmt: skip
        assert "context deadline exceeded" in str(failed.value) or "timed out" in str(failed.value)
        pods = {
            p["metadata"]["labels"]["app.kubernetes.io/component"]: p
            for p in kube.items("pods", "-n", NS)
        }
        assert set(pods) == {"controller", "webhook"}
        assert not any(is_ready(p) for p in pods.values())

        ctl = pods["controller"]["metadata"]["name"]
        wait_for(
            lambda: "cannot resolve the cluster in EC2/EKS" in cluster.logs(ctl, NS),
            timeout=60,
            what="the controller's log line",
        )
        assert "AWS_ENDPOINT_URL" in cluster.logs(ctl, NS)
        hook = pods["webhook"]["metadata"]["name"]
        line = "atomic-gang-webhook: cannot load TLS pair"
        wait_for(
            lambda: line in cluster.logs(hook, NS) + cluster.logs(hook, NS, previous=True),
            timeout=60,
            what="the webhook's log line",
        )
    finally:
        cluster.helm.run("uninstall", RELEASE, "--namespace", NS, "--wait", "--ignore-not-found")
        kube.run("delete", "namespace", NS, "--wait=false", check=False)

"""/metrics behind the apiserver's TokenReview and SubjectAccessReview, on a real
apiserver with RBAC: no token 401, a tenant's token 403, a token bound to the chart's
metrics-reader rule 200; the probes answer anyone."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CollectorRegistry, Gauge

from atomic_gang_devstack.bins import Bins
from atomic_gang_provisioner.httpserver import BoundedServer, serve
from atomic_gang_provisioner.kube import KubeClient
from atomic_gang_provisioner.metrics_access import ApiserverReviewer, MetricsAccess
from tests.integration.kube.conftest import ControlPlane
from tests.support.resources import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, SERVICE_ACCOUNTS

pytestmark = pytest.mark.kube


def token(control_plane: ControlPlane, namespace: str, name: str) -> str:
    kubectl = Bins.load().path("kubectl")
    done = subprocess.run(
        [str(kubectl), "--kubeconfig", str(control_plane.kubeconfig), "create", "token", name,
         "-n", namespace, "--duration=10m"],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    return done.stdout.strip()


@pytest.fixture
def server(client: KubeClient) -> Iterator[BoundedServer]:
    registry = CollectorRegistry()
    Gauge("atomic_gang_pool_held", "held", ["pool"], registry=registry).labels("team-a-p5").set(4)
    srv = serve(
        host="127.0.0.1",
        port=0,
        registry=registry,
        ready=lambda: True,
        access=MetricsAccess(ApiserverReviewer(client)),
    )
    yield srv
    srv.shutdown()
    srv.server_close()


def get(srv: BoundedServer, path: str, bearer: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer is not None else {}
    return httpx.get(f"http://127.0.0.1:{srv.server_port}{path}", headers=headers, timeout=10)


def test_metrics_answer_only_a_reader_token(
    control_plane: ControlPlane, client: KubeClient, namespace: str, server: BoundedServer
) -> None:
    for sa in ("prometheus", "tenant"):
        client.create(SERVICE_ACCOUNTS, {"metadata": {"name": sa, "namespace": namespace}})
    role = f"metrics-reader-{uuid.uuid4().hex[:6]}"
    client.create(
        CLUSTER_ROLES,
        {
            "metadata": {"name": role},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    client.create(
        CLUSTER_ROLE_BINDINGS,
        {
            "metadata": {"name": role},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": namespace}],
        },
    )
    reader, tenant = (token(control_plane, namespace, sa) for sa in ("prometheus", "tenant"))

    anonymous = get(server, "/metrics")
    assert anonymous.status_code == 401
    assert "team-a-p5" not in anonymous.text
    assert get(server, "/metrics", "not-a-token").status_code == 401
    forbidden = get(server, "/metrics", tenant)
    assert forbidden.status_code == 403
    assert "may not get the non-resource URL /metrics" in forbidden.json()["detail"]
    assert "team-a-p5" not in forbidden.text
    allowed = get(server, "/metrics", reader)
    assert allowed.status_code == 200
    assert 'atomic_gang_pool_held{pool="team-a-p5"} 4.0' in allowed.text
    # The probes say only whether the process is up: anyone may ask.
    assert get(server, "/healthz").status_code == 200
    assert get(server, "/readyz").status_code == 200

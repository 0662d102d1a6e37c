"""On the real node: our pods from our images, in-cluster admission,
and a certificate renewal picked up without a restart.

Every claim is checked in the running containers (``kubectl exec``), not in a
replay of the Dockerfiles: UID 65532, a read-only root filesystem, no compiler,
the entrypoints' ``--help``, a complete dependency closure.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from cryptography import x509

from atomic_gang_devstack.components.incluster import RELEASE
from atomic_gang_devstack.components.node import node_images
from tests.e2e.chart.support import renew_certificate
from tests.e2e.cluster.conftest import (
    CONTROLLER_SELECTOR,
    NAMESPACE,
    NODE_NAME,
    TLS_SECRET,
    WEBHOOK_SELECTOR,
    Cluster,
    is_ready,
    served_serial,
)
from tests.e2e.docker.lock import NOT_NEEDED
from tests.e2e.jobs import gang_job
from tests.e2e.kube import wait_for
from tests.support.wait import wait_for as wait_value

pytestmark = pytest.mark.e2e
SERVICES = {"controller": CONTROLLER_SELECTOR, "webhook": WEBHOOK_SELECTOR}
ENTRYPOINTS = {"controller": "atomic-gang-provisioner", "webhook": "atomic-gang-webhook"}
WEBHOOK_PORT = 9443
CONTROLLER_PORT = 8080  # the chart's controller.httpPort
# Every installed distribution's requirements are installed too (what `pip check` checks).
CLOSURE_CHECK = """
import json, re, sys
from importlib import metadata
have = {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower() for d in metadata.distributions()}
missing = set()
for d in metadata.distributions():
    for req in d.requires or []:
        if ";" in req:
            continue  # extras and platform markers: not part of the runtime closure
        name = re.split(r"[ <>=!~\\[(]", req, maxsplit=1)[0]
        name = re.sub(r"[-_.]+", "-", name).lower()
        if name not in have:
            missing.add(name)
print(json.dumps(sorted(missing)))
"""


def _exec(cluster: Cluster, pod: str, *argv: str) -> Any:
    return cluster.kube.run("exec", pod, "-n", NAMESPACE, "--", *argv, check=False)


@pytest.mark.parametrize("service", list(SERVICES))
def test_two_pods_ready_on_the_real_node_from_our_images(cluster: Cluster, service: str) -> None:
    pods = cluster.pods(SERVICES[service])
    built = node_images(cluster.ctx)[service]

    assert len(pods) == 2
    for pod in pods:
        assert pod["spec"]["nodeName"] == NODE_NAME
        assert is_ready(pod), pod["status"]
        (status,) = pod["status"]["containerStatuses"]
        assert status["image"] == built.ref
        assert status["imageID"] == built.image_id  # what `make images` built
        assert status["restartCount"] == 0


def test_the_lease_names_one_controller_pod(cluster: Cluster) -> None:
    names = {p["metadata"]["name"] for p in cluster.pods(CONTROLLER_SELECTOR)}
    assert wait_value(cluster.leader, timeout=60, what="a leader") in names


@pytest.mark.parametrize("service", list(SERVICES))
def test_image_claims_hold_in_the_running_container(cluster: Cluster, service: str) -> None:
    pod = cluster.pods(SERVICES[service])[0]["metadata"]["name"]
    py = "/opt/venv/bin/python"

    uid = _exec(cluster, pod, py, "-c", "import os; print(os.getuid(), os.getgid())")
    assert uid.stdout.split() == ["65532", "65532"]
    write = _exec(cluster, pod, py, "-c", "open('/opt/venv/probe', 'w')")
    assert "Read-only file system" in write.stderr
    tmp = _exec(cluster, pod, py, "-c", "open('/tmp/probe', 'w').write('ok')")
    assert tmp.returncode == 0, tmp.stderr  # the chart's emptyDir
    compilers = _exec(cluster, pod, "sh", "-c", "command -v gcc cc c++ clang || true")
    assert compilers.stdout.strip() == ""
    helped = _exec(cluster, pod, f"/opt/venv/bin/{ENTRYPOINTS[service]}", "--help")
    assert helped.returncode == 0
    assert "usage:" in helped.stdout
    bad = _exec(cluster, pod, f"/opt/venv/bin/{ENTRYPOINTS[service]}", "--config", "/nonexistent")
    assert bad.returncode == 2, bad.stderr  # bad settings fail closed, naming the file
    assert "/nonexistent" in bad.stderr
    closure = _exec(cluster, pod, py, "-c", CLOSURE_CHECK)
    assert set(json.loads(closure.stdout)) <= NOT_NEEDED[service], closure.stderr


def _bad_job(name: str, namespace: str) -> dict[str, Any]:
    return gang_job(
        name,
        namespace,
        annotations={
            "atomic-gang.k8s.aws/count": "many",
            "atomic-gang.k8s.aws/instance-type": "x9.nope",
        },
    )


def _denials_logged(cluster: Cluster, job: str) -> list[str]:
    pods = [p["metadata"]["name"] for p in cluster.pods(WEBHOOK_SELECTOR)]
    return [p for p in pods if job in cluster.logs(p)]


def test_bad_job_denied_by_the_in_cluster_webhook(cluster: Cluster, namespace: str) -> None:
    done = cluster.kube.apply(_bad_job("bad-gang", namespace), check=False)

    assert done.returncode != 0
    assert 'The jobs "bad-gang" is invalid' in done.stderr  # field causes, every one named
    assert "atomic-gang.k8s.aws/count" in done.stderr
    assert "many" in done.stderr
    assert "atomic-gang.k8s.aws/instance-type" in done.stderr
    assert "x9.nope" in done.stderr
    # The review was decided in one of the webhook pods (its structured log names the Job).
    assert wait_value(lambda: _denials_logged(cluster, "bad-gang"), timeout=30, what="the log")
    good = gang_job("good-gang", namespace)
    admitted = cluster.kube.run("create", "--dry-run=server", "-f", "-", stdin=json.dumps(good))
    assert admitted.returncode == 0, admitted.stderr


def _ca_bundle(cluster: Cluster) -> bytes:
    vwc = cluster.kube.get("validatingwebhookconfiguration", "atomic-gang-webhook")
    return base64.b64decode(vwc["webhooks"][0]["clientConfig"].get("caBundle") or "")


def _wait_served(ip: str, ca: bytes, serial: int) -> None:
    wait_for(
        lambda: served_serial(ip, WEBHOOK_PORT, ca) == serial,
        timeout=90,
        what=f"the renewed certificate served at {ip}",
    )


def test_certificate_renewal_is_served_without_a_restart(cluster: Cluster, namespace: str) -> None:
    before = cluster.tls_secret()
    old = x509.load_pem_x509_certificate(before["tls.crt"]).serial_number
    pods = {p["metadata"]["name"]: p["status"]["podIP"] for p in cluster.pods(WEBHOOK_SELECTOR)}
    assert {served_serial(ip, WEBHOOK_PORT, before["ca.crt"]) for ip in pods.values()} == {old}

    renew_certificate(cluster.kube, TLS_SECRET, NAMESPACE)

    def renewed() -> int | None:
        serial = x509.load_pem_x509_certificate(cluster.tls_secret()["tls.crt"]).serial_number
        return serial if serial != old else None

    new = wait_value(renewed, timeout=90, what="cert-manager to re-issue the Secret")
    after = cluster.tls_secret()
    for ip in pods.values():  # kubelet swaps the mounted files; the process re-reads them
        _wait_served(ip, after["ca.crt"], new)
    current = {p["metadata"]["name"]: p for p in cluster.pods(WEBHOOK_SELECTOR)}
    assert set(current) == set(pods)  # the same pods ...
    assert [p["status"]["containerStatuses"][0]["restartCount"] for p in current.values()] == [
        0,
        0,
    ]  # ... never restarted
    assert _ca_bundle(cluster) == after["ca.crt"]  # the cainjector's caBundle
    done = cluster.kube.apply(_bad_job("bad-after-renewal", namespace), check=False)
    assert "[InstanceTypeNotAllowed]" in done.stderr  # admission still goes through our pods


def test_controller_metrics_answer_only_a_metrics_reader(cluster: Cluster, namespace: str) -> None:
    """The chart's default: /metrics behind TokenReview + SubjectAccessReview, through
    the real apiserver, on the pods the chart runs; the probes keep the pods Ready."""
    kube = cluster.kube
    for sa in ("scraper", "tenant"):
        kube.run("create", "serviceaccount", sa, "-n", namespace)
    kube.run("create", "rolebinding", "tenant-edit", "--clusterrole=edit",
             f"--serviceaccount={namespace}:tenant", "-n", namespace)  # fmt: skip
    binding = f"{namespace}-metrics"
    kube.run("create", "clusterrolebinding", binding,
             f"--clusterrole={RELEASE}-controller-metrics-reader",
             f"--serviceaccount={namespace}:scraper")  # fmt: skip
    try:
        tokens = {
            sa: kube.run("create", "token", sa, "-n", namespace, "--duration=10m").stdout.strip()
            for sa in ("scraper", "tenant")
        }
        for pod in cluster.pods(CONTROLLER_SELECTOR):
            url = f"http://{pod['status']['podIP']}:{CONTROLLER_PORT}/metrics"

            def scrape(token: str | None, url: str = url) -> httpx.Response:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                return httpx.get(url, headers=headers, timeout=10)

            assert scrape(None).status_code == 401
            assert scrape(tokens["tenant"]).status_code == 403  # edit in its namespace: no
            allowed = scrape(tokens["scraper"])
            assert allowed.status_code == 200
            assert "\natomic_gang_leader " in allowed.text
            assert is_ready(pod)
    finally:
        kube.run("delete", "clusterrolebinding", binding, check=False)

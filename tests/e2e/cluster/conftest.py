"""The in-cluster tier: the stack with a real kubelet node, our images and the chart.

One stack per package, started exactly as ``make cluster-up`` starts it (the
same options, in a state dir of its own): cert-manager, then ``helm upgrade
--install`` of the chart with the images ``make images`` built. The host is
snapshotted before it starts; ``test_teardown.py`` (last, by name) stops the
stack and compares.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import ssl
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography import x509

from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.components.incluster import NAMESPACE, RELEASE, Helm
from atomic_gang_devstack.components.node import NODE_NAME
from atomic_gang_devstack.node import host, snapshot
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions
from tests.e2e.kube import Kube, wait_for
from tests.e2e.provisioner.harness import World

COMPONENT = "app.kubernetes.io/component"
WEBHOOK_SELECTOR = f"app.kubernetes.io/instance={RELEASE},{COMPONENT}=webhook"
CONTROLLER_SELECTOR = f"app.kubernetes.io/instance={RELEASE},{COMPONENT}=controller"
TLS_SECRET = f"{RELEASE}-webhook-tls"  # also the Certificate's name
LEASE = "atomic-gang-provisioner"


@dataclass
class Cluster:
    stack: Stack
    ctx: Context
    kube: Kube
    world: World
    host_before: dict[str, object]
    down: bool = False

    @property
    def helm(self) -> Helm:
        return Helm(self.ctx)

    def pods(self, selector: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
        items = self.kube.items("pods", "-n", namespace, "-l", selector)
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def leader(self) -> str:
        """The controller pod named by the Lease ('' while none holds it)."""
        done = self.kube.run("get", "lease", LEASE, "-n", NAMESPACE, "-o", "json", check=False)
        if done.returncode != 0:
            return ""
        holder = str(json.loads(done.stdout)["spec"].get("holderIdentity") or "")
        names = [p["metadata"]["name"] for p in self.pods(CONTROLLER_SELECTOR)]
        return next((n for n in names if holder.startswith(n)), "")

    def logs(self, pod: str, namespace: str = NAMESPACE, *, previous: bool = False) -> str:
        args = ["logs", pod, "-n", namespace, *(["--previous"] if previous else [])]
        return self.kube.run(*args, check=False).stdout

    def tls_secret(self) -> dict[str, bytes]:
        data = self.kube.get("secret", TLS_SECRET, "-n", NAMESPACE)["data"]
        return {k: base64.b64decode(v) for k, v in data.items()}


def bound_pod(
    name: str, namespace: str, image: str, command: tuple[str, ...] = ("sleep", "300")
) -> dict[str, Any]:
    """A bare Pod bound to the real node, tolerating nothing and holding no token (what a
    tenant can write), running ``command``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": NODE_NAME,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "tenant",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": list(command),
                }
            ],
        },
    }


def is_ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def served_serial(pod_ip: str, port: int, ca_pem: bytes) -> int:
    """Serial of the certificate a new TLS connection to the pod gets (host -> pod IP)."""
    tls = ssl.create_default_context(cadata=ca_pem.decode())
    tls.check_hostname = False  # the pod IP is not in the certificate; the CA chain is checked
    with (
        socket.create_connection((pod_ip, port), timeout=5) as raw,
        tls.wrap_socket(raw) as conn,
    ):
        der = conn.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # The host as it is without any node: what an abandoned stack's node left (a
    # `make cluster-up` replaced by `make dev-up`, say) is undone first, and the
    # teardown test holds the host to that.
    host.sweep()
    before = snapshot.snapshot()
    state_dir = tmp_path_factory.mktemp("cluster")
    options = StackOptions(
        state_dir=state_dir,
        detach=False,  # if this pytest session dies hard, the stack dies with it
        webhook=False,
        queues=False,
        check_stand_in=False,
        cloud=True,
        nodesim=True,
        boot_delay=1.0,
        capacity_file=REPO_ROOT / "hack" / "devstack-capacity.yaml",
        real_node=True,
        in_cluster=True,
    )
    stack = Stack(options, default_components(options))
    ctx = stack.up()
    kube = Kube(ctx.bins.path("kubectl"), ctx.admin_kubeconfig(), ctx.dir / "kubectl-cache")
    world = World.connect(ctx, access_key="e2e")
    c = Cluster(stack, ctx, kube, world, before)
    try:
        yield c
    finally:
        world.kube.close()
        if not c.down:
            stack.down()


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace with a LocalQueue on the chart's ClusterQueue."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:30].rstrip("-")
    name = f"cl-{slug}-{uuid.uuid4().hex[:6]}"
    cluster.kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    cluster.kube.apply(dev_objects.local_queue(name))
    wait_for(
        lambda: cluster.kube.run("get", "sa", "default", "-n", name, check=False).returncode == 0,
        timeout=30,
        what=f"serviceaccount default in {name}",
    )
    yield name
    cluster.kube.run("delete", "namespace", name, "--wait=false", check=False)


__all__ = ["NAMESPACE", "NODE_NAME", "RELEASE", "Cluster", "is_ready", "served_serial"]

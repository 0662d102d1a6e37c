"""One real etcd + kube-apiserver per session for the kube adapter's tests.

Started through the devstack's component API (no controllers, no Kueue
manager): our adapter talks to a real apiserver, never to a fake. Secrets have
their watch cache disabled, so a watch on them reads etcd directly and an etcd
compaction produces a genuine ``410 Gone``. Missing binaries are built after
collection, outside any test's timeout; a failed build fails the session.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from atomic_gang_devstack.bins import Bins
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components.control_plane import ApiServer, Etcd
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions
from atomic_gang_provisioner.kube import KubeClient, NotFoundError
from tests.support import resources as r
from tests.support.wait import wait_for

# kueue: its source tree holds the Workload CRD; kubectl: ServiceAccount tokens.
NEEDED = ("etcd", "kube-apiserver", "kueue", "kubectl")


class _ApiServer(ApiServer):
    def argv(self, ctx: Context) -> list[str]:
        return [*super().argv(ctx), "--watch-cache-sizes=secrets#0"]


@dataclass(frozen=True)
class ControlPlane:
    ctx: Context
    kubeconfig: Path
    etcd_url: str

    def compact_etcd(self) -> int:
        """Compact etcd up to its current revision; return that revision."""
        key = base64.b64encode(b"\0").decode()
        rng = httpx.post(f"{self.etcd_url}/v3/kv/range", json={"key": key}, timeout=10)
        rev = int(rng.json()["header"]["revision"])
        done = httpx.post(
            f"{self.etcd_url}/v3/kv/compaction",
            json={"revision": str(rev), "physical": True},
            timeout=10,
        )
        done.raise_for_status()
        return rev


FIGURES: dict[str, str] = {}  # measured by the tests, printed in the terminal summary


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("kube adapter figures")
        for what, value in FIGURES.items():
            terminalreporter.write_line(f"{what}: {value}")


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(item.get_closest_marker("kube") for item in session.items):
        Bins.load().ensure(NEEDED)  # raises if it cannot build: nothing is skipped


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    # detach=False: if this pytest session dies hard, its etcd and apiserver die with it.
    options = StackOptions(state_dir=tmp_path_factory.mktemp("kube-apiserver"), detach=False)
    stack = Stack(options, [Etcd(), _ApiServer()])
    ctx = stack.up()
    try:
        yield ControlPlane(
            ctx=ctx,
            kubeconfig=ctx.admin_kubeconfig(),
            etcd_url=f"http://127.0.0.1:{ctx.port('etcd-client')}",
        )
    finally:
        stack.down()


@pytest.fixture(scope="session")
def client(control_plane: ControlPlane) -> Iterator[KubeClient]:
    c = KubeClient.from_kubeconfig(control_plane.kubeconfig)
    yield c
    c.close()


@pytest.fixture
def namespace(client: KubeClient) -> str:
    """A fresh namespace (never deleted: there is no namespace controller to finish it)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    client.create(r.NAMESPACES, {"metadata": {"name": name}})
    return name


def install_crd(client: KubeClient, crd: dict[str, Any]) -> None:
    """Create a CRD, or make the one there this one (another module of the same worker may
    have installed another version of it), and wait until it is Established and served."""
    name = str(crd["metadata"]["name"])
    try:
        current = client.get(r.CRDS, name)
    except NotFoundError:
        client.create(r.CRDS, crd)
    else:
        if current.get("spec") != crd["spec"]:
            rv = current["metadata"]["resourceVersion"]
            client.replace(r.CRDS, {**crd, "metadata": {**crd["metadata"], "resourceVersion": rv}})

    def established() -> bool:
        conds = client.get(r.CRDS, name).get("status", {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conds)

    wait_for(established, timeout=60, interval=0.05, what=f"CRD {name} established")


@pytest.fixture(scope="session")
def workload_crd(client: KubeClient) -> None:
    """The pinned Kueue's Workload CRD, served as v1beta2 with its status schema verbatim.

    The spec schema (600 kB of PodTemplate, ~18 s of CEL/OpenAPI compilation on
    two cores) is swapped for preserve-unknown-fields: these tests write status.
    """
    bases = Bins.load().source("kueue") / "config" / "components" / "crd" / "bases"
    crd = yaml.safe_load((bases / "kueue.x-k8s.io_workloads.yaml").read_text(encoding="utf-8"))
    (v1beta2,) = (v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    schema = v1beta2["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schema.pop("x-kubernetes-validations", None)  # rules over spec fields
    crd["spec"]["versions"] = [v1beta2]
    install_crd(client, crd)
    # Established can precede discovery by a moment: wait until the collection answers.
    wait_for(
        lambda: client.list(r.WORKLOADS, namespace="default") is not None,
        timeout=30,
        interval=0.05,
        what="workloads served",
    )


def elapsed_ms(start: float) -> float:
    return (time.monotonic() - start) * 1000.0


def dump(obj: object) -> str:
    return json.dumps(obj, indent=1, sort_keys=True)


WIDGETS = r.Resource("test.atomic-gang.k8s.aws", "v1", "widgets", namespaced=False, kind="Widget")
_ENTRY = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "state": {"type": "string"}},
}
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{WIDGETS.plural}.{WIDGETS.group}"},
    "spec": {
        "group": WIDGETS.group,
        "scope": "Cluster",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "entries": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": _ENTRY,
                                    },
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="session")
def widget_crd(client: KubeClient) -> r.Resource:
    """A small cluster-scoped CRD with a status subresource, shaped like GangNodePool."""
    install_crd(client, WIDGET_CRD)
    wait_for(lambda: client.list(WIDGETS) is not None, timeout=30, interval=0.05, what="widgets")
    return WIDGETS

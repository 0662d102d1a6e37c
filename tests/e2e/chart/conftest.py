"""Chart e2e fixtures: cert-manager (built from source, run for real), kwok nodes, helm.

cert-manager v1.11.5 is the last release whose controller and cainjector live
in its root module, so hack/build-bins.sh builds both through a wrapper
module; its CRDs come from the same module zip. Both run as local processes
against the session's control plane, like Kueue does.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from atomic_gang_devstack import procs
from atomic_gang_devstack.components.incluster import cert_manager_crds
from atomic_gang_devstack.components.kwok import fake_node
from tests.e2e.chart.release import JOBS_NS, NODE_LABEL, NS, RELEASE, Release, chart_values
from tests.e2e.chart.support import SecretVolume, WebhookProcess
from tests.e2e.conftest import LocalStack
from tests.e2e.kube import Kube, wait_for
from tests.integration.chart.render import CHART, KUBE_VERSION, Obj
from tests.support.webhook_proc import free_port

NODES = ("kwok-chart-0", "kwok-chart-1")


@dataclass(frozen=True)
class CertManager:
    version: str
    controller: procs.ProcRecord
    cainjector: procs.ProcRecord


@pytest.fixture(scope="session")
def cert_manager(local_stack: LocalStack) -> Iterator[CertManager]:
    """cert-manager's CRDs, controller and cainjector, for the rest of the session."""
    ctx, kube = local_stack.ctx, local_stack.kube
    version = ctx.bins.version("cert-manager-controller")
    crds = cert_manager_crds(ctx.bins.root / f"cert-manager-{version}-src")
    assert {c["spec"]["names"]["kind"] for c in crds} >= {"Issuer", "Certificate"}
    kube.run("apply", "--server-side", "-f", "-", stdin="\n---\n".join(map(json.dumps, crds)))
    ctx.kubectl.wait_established(c["metadata"]["name"] for c in crds)
    kubeconfig = str(ctx.admin_kubeconfig())
    common = [f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--v=2"]
    metrics = f"--metrics-listen-address=127.0.0.1:{ctx.picker.pick()}"
    controller = procs.spawn(
        "cert-manager-controller",
        [str(ctx.bins.path("cert-manager-controller")), *common, metrics],
        log=ctx.log_path("cert-manager-controller"),
        die_with_parent=True,
    )
    cainjector = procs.spawn(
        "cert-manager-cainjector",
        [str(ctx.bins.path("cert-manager-cainjector")), *common],
        log=ctx.log_path("cert-manager-cainjector"),
        die_with_parent=True,
    )
    try:
        yield CertManager(version, controller, cainjector)
    finally:
        procs.stop(controller)
        procs.stop(cainjector)


@pytest.fixture(scope="session")
def chart_nodes(local_stack: LocalStack) -> Iterator[tuple[str, ...]]:
    """Two kwok nodes the chart's pods are pinned to (nodeSelector)."""
    kube = local_stack.kube
    for name in NODES:
        kube.apply(fake_node(name, labels={NODE_LABEL: "true"}))
    kube.run("wait", "--for=condition=Ready", "--timeout=60s", *(f"node/{n}" for n in NODES))
    yield NODES
    kube.run("delete", "node", *NODES, "--wait=false", check=False)


@dataclass(frozen=True)
class Helm:
    """The pinned helm against the session's control plane, with its own HELM_* homes."""

    binary: Path
    kubeconfig: Path
    home: Path

    def run(self, *args: str, values: Obj | None = None, check: bool = True) -> str:
        argv = [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args]
        if values is not None:
            argv += ["--values", "-"]
        env = {
            **os.environ,
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_DATA_HOME": str(self.home / "data"),
        }
        done = subprocess.run(
            argv,
            input=json.dumps(values) if values is not None else None,
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout + done.stderr

    def install(self, release: str, namespace: str, values: Obj, *extra: str) -> str:
        return self.run(
            "install",
            release,
            str(CHART),
            "--namespace",
            namespace,
            "--create-namespace",
            "--wait",
            "--timeout",
            "3m",
            *extra,
            values=values,
        )

    def manifest(self, release: str, namespace: str) -> list[Obj]:
        text = self.run("get", "manifest", release, "--namespace", namespace)
        return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="session")
def helm(local_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    ctx = local_stack.ctx
    assert ctx.bins.version("kube-apiserver").lstrip("v") == KUBE_VERSION
    return Helm(ctx.bins.path("helm"), ctx.admin_kubeconfig(), tmp_path_factory.mktemp("helm"))


def wait_ready_pods(kube: Kube, namespace: str, selector: str, count: int) -> list[Obj]:
    """Pods matching ``selector`` once exactly ``count`` are Ready (no others left)."""

    def ready() -> list[Obj] | None:
        pods = kube.items("pods", "-n", namespace, "-l", selector)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        ok = [p for p in live if _is_ready(p)]
        return ok if len(ok) == count == len(live) else None

    return wait_for(ready, timeout=120, what=f"{count} ready pods {selector} in {namespace}")


def _is_ready(pod: Obj) -> bool:
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0"


@pytest.fixture(scope="session")
def service_monitor_crd(local_stack: LocalStack) -> str:
    """The ServiceMonitor and PrometheusRule CRDs from the Prometheus Operator's module zip
    (Go module proxy)."""
    done = subprocess.run(
        ["go", "mod", "download", "-json", PROMETHEUS_OPERATOR],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
    )
    crd = Path(json.loads(done.stdout)["Dir"]) / "example" / "prometheus-operator-crd"
    for kind in ("servicemonitors", "prometheusrules"):
        path = crd / f"monitoring.coreos.com_{kind}.yaml"
        local_stack.kube.run("apply", "--server-side", "-f", str(path))
    name = "servicemonitors.monitoring.coreos.com"
    local_stack.ctx.kubectl.wait_established([name, "prometheusrules.monitoring.coreos.com"])
    return name


@pytest.fixture(scope="session")
def helm_binary(local_stack: LocalStack) -> Path:
    return local_stack.ctx.bins.path("helm")


@pytest.fixture(scope="module")
def release(
    local_stack: LocalStack,
    cert_manager: CertManager,
    chart_nodes: tuple[str, ...],
    helm: Helm,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Release]:
    kube, tmp = local_stack.kube, tmp_path_factory.mktemp("chart-e2e")
    kube.run("create", "namespace", JOBS_NS, check=False)
    port = free_port()
    values = chart_values(port)
    out = helm.install(RELEASE, NS, values)
    settings = tmp / "settings.yaml"
    volume = SecretVolume(tmp / "tls")
    webhook = WebhookProcess(port, volume, settings, local_stack.ctx.log_path("chart-webhook"))
    rel = Release(helm, kube, values, out, webhook)
    try:
        yield rel
    finally:
        webhook.stop()
        if rel.installed:
            helm.run("uninstall", RELEASE, "--namespace", NS, "--wait", check=False)
        kube.run("delete", "namespace", NS, JOBS_NS, "--wait=false", check=False)

"""The chart's two services in-cluster: cert-manager, then ``helm upgrade --install``.

cert-manager v1.11.5 (the last release whose controller and cainjector can be
built from the Go module proxy) runs as two host processes against the
stack's apiserver, its CRDs from the same module zip. Our chart is installed
with the images ``make images`` built (``IfNotPresent`` on the real node),
``auth.mode: static`` credentials for the simulated EC2 and no
``webhook.devUrl``: the apiserver calls the webhook pods through their Service.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, ClassVar

import yaml

from atomic_gang_devstack import dev_objects, waits
from atomic_gang_devstack.component import Component, Context, ProcessComponent
from atomic_gang_devstack.components.cloud import DUMMY_AWS, FakeAws
from atomic_gang_devstack.components.node import node_images, node_net
from atomic_gang_devstack.node.config import SYSTEM_LABEL, SYSTEM_TAINT_KEY

REPO = Path(__file__).resolve().parents[4]
CHART = REPO / "charts" / "atomic-gang-provisioner"
RELEASE, NAMESPACE = "atomic-gang", "atomic-gang-system"
AWS_SECRET = "atomic-gang-aws"  # noqa: S105 - a Secret name
HELM_TIMEOUT = "5m"


def cert_manager_crds(src: Path) -> list[dict[str, Any]]:
    """The CRDs of cert-manager's module zip, minus their Helm-templated labels."""
    docs: list[dict[str, Any]] = []
    for path in sorted((src / "deploy" / "crds").glob("crd-*.yaml")):
        text = re.sub(r"\{\{.*?\}\}", "", path.read_text(encoding="utf-8"))
        for doc in yaml.safe_load_all(text):
            if doc:
                doc["metadata"].pop("labels", None)
                docs.append(doc)
    return docs


class CertManagerCrds(Component):
    name = "cert-manager-crds"
    needs = ("kube-apiserver",)

    @staticmethod
    def crds(ctx: Context) -> list[dict[str, Any]]:
        version = ctx.bins.version("cert-manager-controller")
        return cert_manager_crds(ctx.bins.root / f"cert-manager-{version}-src")

    def start(self, ctx: Context) -> None:
        ctx.kubectl.apply(self.crds(ctx))

    def wait_ready(self, ctx: Context) -> None:
        ctx.kubectl.wait_established(c["metadata"]["name"] for c in self.crds(ctx))


class _CertManagerProcess(ProcessComponent):
    needs = ("cert-manager-crds",)
    binary = ""

    def argv(self, ctx: Context) -> list[str]:
        return [
            str(ctx.bins.path(self.binary)),
            f"--kubeconfig={ctx.admin_kubeconfig()}",
            "--leader-elect=false",
            "--v=2",
            *self.flags(ctx),
        ]

    def flags(self, ctx: Context) -> list[str]:
        return []


class CertManagerController(_CertManagerProcess):
    name = "cert-manager-controller"
    binary = "cert-manager-controller"

    def flags(self, ctx: Context) -> list[str]:
        port = ctx.port(self.name)
        return [f"--metrics-listen-address=127.0.0.1:{port}"]

    def probe(self, ctx: Context) -> bool:
        return waits.http_ok(f"http://127.0.0.1:{ctx.port(self.name)}/metrics")


class CertManagerCAInjector(_CertManagerProcess):
    name = "cert-manager-cainjector"
    binary = "cert-manager-cainjector"

    def probe(self, ctx: Context) -> bool:
        return True  # it serves nothing; alive is all there is to check


def pod_aws_endpoint(ctx: Context) -> str:
    """The simulated EC2 as pods reach it: the node IP (fakeaws listens on 0.0.0.0)."""
    return f"http://{node_net(ctx).node_ip}:{ctx.port(FakeAws.name)}"


def chart_values(ctx: Context) -> dict[str, Any]:
    """Values for the in-cluster release: local images, the system node, static AWS auth."""
    images = node_images(ctx)
    repo, _, tag = images["controller"].ref.rpartition(":")
    on_node = {
        "nodeSelector": {SYSTEM_LABEL: "true"},
        "tolerations": [{"key": SYSTEM_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
    }
    api = {  # no kube-proxy: the in-cluster config dials the apiserver at the node IP
        "KUBERNETES_SERVICE_HOST": node_net(ctx).node_ip,
        "KUBERNETES_SERVICE_PORT": str(ctx.port("apiserver")),
        "AWS_ENDPOINT_URL": pod_aws_endpoint(ctx),
    }
    return {
        **dev_objects.DEV_SETTINGS,
        "image": {"repository": repo, "tag": tag, "pullPolicy": "IfNotPresent"},
        "auth": {"mode": "static", "static": {"secretName": AWS_SECRET}},
        "leaderElection": {
            "leaseDurationSeconds": 6,
            "renewDeadlineSeconds": 4,
            "retryPeriodSeconds": 1,
        },
        "controller": {**on_node, "extraEnv": [{"name": k, "value": v} for k, v in api.items()]},
        "webhook": {**on_node},
        "kueue": {"clusterQueue": {"nominalQuota": dict(dev_objects.QUOTA)}},
    }


class Helm:
    """The pinned helm against the stack, with HELM_* homes of its own."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def run(self, *args: str, values: dict[str, Any] | None = None, timeout: float = 600) -> str:
        home = self.ctx.dir / "helm"
        argv = [str(self.ctx.bins.path("helm")), f"--kubeconfig={self.ctx.admin_kubeconfig()}"]
        argv += [*args, *(["--values", "-"] if values is not None else [])]
        env = {
            **os.environ,
            **{f"HELM_{k}_HOME": str(home / k.lower()) for k in ("CACHE", "CONFIG", "DATA")},
        }
        done = subprocess.run(
            argv,
            input=json.dumps(values) if values is not None else None,
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise waits.ComponentFailedError(
                "helm", f"helm {' '.join(args)}: {done.stderr.strip()}"
            )
        return done.stdout


def static_aws_secret() -> dict[str, Any]:
    """What ``auth.mode: static`` reads (envFrom): the simulated EC2's test credentials."""
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": AWS_SECRET, "namespace": NAMESPACE},
        "stringData": {k: DUMMY_AWS[k] for k in keys},
    }


class ChartRelease(Component):
    name = "chart-release"
    needs: ClassVar[tuple[str, ...]] = (
        "kubelet",
        "kueue",
        "cert-manager-controller",
        "cert-manager-cainjector",
        "gangnodepool-crd",
        "fakeaws-setup",
    )

    def start(self, ctx: Context) -> None:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        ctx.kubectl.apply([ns, static_aws_secret()])
        Helm(ctx).run(
            "upgrade", "--install", RELEASE, str(CHART), "--namespace", NAMESPACE,
            "--wait", "--timeout", HELM_TIMEOUT, values=chart_values(ctx),
        )  # fmt: skip

    def stop(self, ctx: Context) -> None:
        # The apiserver may be gone already; then nothing of ours outlives it.
        with contextlib.suppress(waits.ComponentFailedError):
            Helm(ctx).run(
                "uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", "--ignore-not-found"
            )
        ctx.kubectl.run(
            "delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false", check=False
        )

    def healthy(self, ctx: Context) -> bool:
        try:
            status = json.loads(
                Helm(ctx).run("status", RELEASE, "--namespace", NAMESPACE, "-o", "json")
            )
        except (waits.ComponentFailedError, ValueError):
            return False
        return bool(status.get("info", {}).get("status") == "deployed")

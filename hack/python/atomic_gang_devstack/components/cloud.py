"""Simulated EC2 and the provisioner as stack components.

``FakeAws`` is moto behind our fidelity and fault layer (a separate process,
seeded with the dev cluster's VPC, subnets, EKS cluster and node role);
``GangCrd`` installs the GangNodePool CRD from the chart; ``Provisioner`` is one
replica of the real controller, configured only through its documented env.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml

from atomic_gang_devstack import dev_objects, waits
from atomic_gang_devstack.component import Component, Context, ProcessComponent

REPO = Path(__file__).resolve().parents[4]
CRD_FILE = REPO / "charts/atomic-gang-provisioner/crds/gangnodepools.atomic-gang.k8s.aws.yaml"
NODESIM_KEY = "nodesim"  # the simulator's access key: its IMDS-like reads skip throttling
DUMMY_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def fakeaws_endpoint(ctx: Context) -> str:
    return f"http://127.0.0.1:{ctx.port(FakeAws.name)}"


def aws_env(ctx: Context) -> dict[str, str]:
    """What a boto3 client (ours or the ``aws`` CLI) needs to reach the simulated EC2."""
    return {**DUMMY_AWS, "AWS_ENDPOINT_URL": fakeaws_endpoint(ctx)}


class FakeAws(ProcessComponent):
    name = "fakeaws"
    ready_timeout = 60.0

    def argv(self, ctx: Context) -> list[str]:
        return [
            sys.executable,
            "-m",
            "atomic_gang_fakeaws",
            "serve",
            "--host",
            "0.0.0.0" if ctx.options.real_node else "127.0.0.1",  # noqa: S104 - pods: node IP
            "--port",
            str(ctx.port(self.name)),
            "--region",
            "us-east-1",
            "--seed-cluster",
            str(dev_objects.DEV_SETTINGS["clusterName"]),
            "--world-file",
            str(ctx.dir / "fakeaws-world.json"),
            "--unthrottled-caller",
            NODESIM_KEY,
        ]

    def env(self, ctx: Context) -> Mapping[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ATOMIC_GANG_"))}
        return {**base, **DUMMY_AWS, "PYTHONUNBUFFERED": "1"}

    def probe(self, ctx: Context) -> bool:
        world = ctx.dir / "fakeaws-world.json"
        return world.exists() and waits.http_ok(f"{fakeaws_endpoint(ctx)}/_fake/health")

    def world(self, ctx: Context) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((ctx.dir / "fakeaws-world.json").read_text())
        return data


class GangCrd(Component):
    """The GangNodePool CRD, from the chart (generated from the pydantic models)."""

    name = "gangnodepool-crd"
    needs = ("kube-apiserver",)

    def start(self, ctx: Context) -> None:
        ctx.kubectl.apply(list(yaml.safe_load_all(CRD_FILE.read_text())))

    def wait_ready(self, ctx: Context) -> None:
        ctx.kubectl.wait_established(["gangnodepools.atomic-gang.k8s.aws"], timeout=30)


def provisioner_settings(ctx: Context, **overrides: Any) -> Path:
    """The dev settings file for provisioner replicas (chart value names)."""
    data = {
        **dev_objects.DEV_SETTINGS,
        "leaderElection": {
            "enabled": True,
            "namespace": ctx.options.namespace,
            "leaseDurationSeconds": 4,
            "renewDeadlineSeconds": 3,
            "retryPeriodSeconds": 0.5,
        },
        **overrides,
    }
    path = ctx.dir / "provisioner" / "settings.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def provisioner_env(ctx: Context, *, identity: str, port: int, settings: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ATOMIC_GANG_"))}
    return {
        **base,
        **aws_env(ctx),
        "KUBECONFIG": str(ctx.admin_kubeconfig()),
        "ATOMIC_GANG_CONFIG": str(settings),
        "ATOMIC_GANG_PROVISIONER_HTTP_HOST": "127.0.0.1",
        "ATOMIC_GANG_PROVISIONER_HTTP_PORT": str(port),
        "ATOMIC_GANG_PROVISIONER_NAMESPACE": ctx.options.namespace,
        # On 127.0.0.1 only, read by the tests and benches; the chart's pods answer only a
        # reader's token (tests/integration/kube/test_metrics_access.py, tests/e2e/cluster).
        "ATOMIC_GANG_PROVISIONER_METRICS_AUTH": "none",
        "POD_NAME": identity,
        "PYTHONUNBUFFERED": "1",
    }


class Provisioner(ProcessComponent):
    """Replica ``index`` of the provisioner (leader election picks the active one)."""

    needs: ClassVar[tuple[str, ...]] = ("kube-apiserver", "kueue", "fakeaws", "gangnodepool-crd")
    ready_timeout = 60.0

    def __init__(self, index: int) -> None:
        self.index = index
        self.name = f"atomic-gang-provisioner-{index}"  # type: ignore[misc]

    def prepare(self, ctx: Context) -> None:
        provisioner_settings(ctx, **ctx.options.provisioner_settings)

    def argv(self, ctx: Context) -> list[str]:
        # Restarted when it exits (a replica that loses its lease does), as in a cluster.
        restart = [sys.executable, "-m", "atomic_gang_devstack.restart", "--"]
        return [*restart, sys.executable, "-m", "atomic_gang_provisioner"]

    def env(self, ctx: Context) -> Mapping[str, str]:
        return provisioner_env(
            ctx,
            identity=self.name,
            port=ctx.port(self.name),
            settings=ctx.dir / "provisioner" / "settings.yaml",
        )

    def probe(self, ctx: Context) -> bool:
        return waits.http_ok(f"http://127.0.0.1:{ctx.port(self.name)}/readyz")

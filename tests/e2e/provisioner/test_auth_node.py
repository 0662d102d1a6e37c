"""``auth.mode: node`` renders and runs: the provisioner started exactly as the chart's
Deployment starts it (its env and args, its ConfigMap's settings) finds AWS credentials
through boto3's default chain, i.e. from the node's instance metadata service.

Stand-ins, and only these: a kubeconfig for the pod's ServiceAccount token, the
simulated EC2's endpoint for AWS's, and that server's IMDS (moto serves
``/latest/meta-data/``, credentials for the key ``test-key``) for the node's. Nothing
else tells boto3 where credentials are: no key variables, no config files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.components.cloud import fakeaws_endpoint
from tests.e2e.provisioner.conftest import unique
from tests.e2e.provisioner.harness import World, reaper_sweeps
from tests.integration.chart.render import REQUIRED, helm_path, merge, render
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
IMDS_KEY = "test-key"  # moto's instance-metadata credentials


def _rendered(lease: str) -> tuple[dict[str, Any], str]:
    """The controller container and the settings file of a chart render with auth=node."""
    values = merge(
        REQUIRED,
        {
            **dev_objects.DEV_SETTINGS,
            "auth": {"mode": "node"},
            "leaderElection": {"namespace": "default", "leaseName": lease},
            "reapIntervalSeconds": 2,
        },
    )
    r = render(helm_path(), values)
    assert r.returncode == 0, r.stderr
    pod = r.one("Deployment", "-controller")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return container, r.one("ConfigMap", "-settings")["data"]["settings.yaml"]


def _env(container: dict[str, Any], *, pod: str) -> dict[str, str]:
    """The container's env, fieldRefs resolved as the kubelet would."""
    fields = {"metadata.name": pod, "metadata.namespace": "default"}
    out: dict[str, str] = {}
    for e in container["env"]:
        ref = (e.get("valueFrom") or {}).get("fieldRef")
        out[e["name"]] = fields[ref["fieldPath"]] if ref else str(e["value"])
    return out


@pytest.fixture
def node_mode(world: World, tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    lease = unique("node-auth")
    container, settings = _rendered(lease)
    assert "envFrom" not in container  # no key Secret in this mode
    config = tmp_path / "settings.yaml"
    config.write_text(settings)
    args = [config.as_posix() if a.endswith("settings.yaml") else a for a in container["args"]]
    port = world.ctx.picker.pick()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ATOMIC_GANG_"))}
    endpoint = fakeaws_endpoint(world.ctx)
    env = {
        **base,
        **_env(container, pod="node-mode-0"),
        "ATOMIC_GANG_PROVISIONER_KUBECONFIG": str(world.ctx.admin_kubeconfig()),
        "ATOMIC_GANG_PROVISIONER_HTTP_HOST": "127.0.0.1",
        "ATOMIC_GANG_PROVISIONER_HTTP_PORT": str(port),
        # Read by this test on 127.0.0.1 (the chart's reader-token rule: tests/e2e/cluster).
        "ATOMIC_GANG_PROVISIONER_METRICS_AUTH": "none",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": endpoint,
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
    }
    assert not {k for k in env if k.startswith("AWS_") and ("KEY" in k or "TOKEN" in k)}
    world.fake.clear_calls()  # from here on, every call is this process's
    log = (tmp_path / "provisioner.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "atomic_gang_provisioner", *args], env=env, stdout=log, stderr=log
    )
    try:
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(timeout=40)
        log.close()


def test_auth_mode_node_runs_on_the_default_credential_chain(
    world: World, node_mode: tuple[int, subprocess.Popen[bytes]]
) -> None:
    port, proc = node_mode
    wait_for(lambda: reaper_sweeps(port) >= 1, timeout=60, what="a sweep with node credentials")
    assert proc.poll() is None
    listings = world.fake.calls("DescribeInstances")
    assert listings, "the reaper listed nothing"
    assert {c["caller"] for c in listings} == {IMDS_KEY}

"""The chart's webhook registration (Jobs, JobSets, TrainJobs, the Trainer's runtimes) is
accepted by a real API server: its CEL match conditions compile (a bad one fails only at
install time otherwise)."""

from __future__ import annotations

import json
import subprocess

import pytest

from atomic_gang_devstack.bins import Bins
from tests.integration.chart.render import REQUIRED, helm_path, render
from tests.integration.kube.conftest import ControlPlane

pytestmark = pytest.mark.kube


def test_the_registration_compiles_on_the_api_server(control_plane: ControlPlane) -> None:
    rendered = render(helm_path(), REQUIRED)
    assert rendered.returncode == 0, rendered.stderr
    vwc = rendered.one("ValidatingWebhookConfiguration")
    assert len(vwc["webhooks"]) == 4
    kubectl = Bins.load().path("kubectl")
    done = subprocess.run(
        [str(kubectl), "--kubeconfig", str(control_plane.kubeconfig), "create",
         "--dry-run=server", "-o", "json", "-f", "-"],
        input=json.dumps(vwc), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert [w["name"] for w in created["webhooks"]] == [w["name"] for w in vwc["webhooks"]]

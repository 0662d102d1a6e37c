"""bench.scale's write probe against a real apiserver: its own process PATCHes a
ConfigMap every 200 ms and logs each latency until it is stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from atomic_gang_provisioner.kube import KubeClient
from bench import apiserver_probe, box
from tests.integration.kube.conftest import ControlPlane
from tests.support import resources as r
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube


def test_the_probe_times_real_writes_until_stopped(
    control_plane: ControlPlane, client: KubeClient, tmp_path: Path
) -> None:
    out = tmp_path / "probe.txt"
    probe = box.WriteProbe(control_plane.kubeconfig, out)
    with probe:
        wait_for(lambda: out.exists() and len(out.read_text().splitlines()) >= 3, timeout=30)
    written = len(out.read_text().splitlines())
    latencies = probe.latencies(0.0, float("inf"))
    assert len(latencies) == written >= 3
    assert all(0 < lat < 5 for lat in latencies)
    stored = client.get(r.CONFIG_MAPS, apiserver_probe.NAME, namespace=apiserver_probe.NAMESPACE)
    assert int(stored["data"]["n"]) >= written  # each line is one write the server took
    assert probe.exit_code is not None  # stopped with the context

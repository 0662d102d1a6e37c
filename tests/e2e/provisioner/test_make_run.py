"""``make run CONFIG=settings.yaml`` runs the controller against the current
kubeconfig's cluster: here the local stack's, with the simulated EC2 as AWS."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_devstack.components.cloud import aws_env
from tests.e2e.provisioner.conftest import unique
from tests.e2e.provisioner.harness import World, reaper_sweeps
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e


def test_make_run_starts_the_controller_with_the_settings_file(
    world: World, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.yaml"
    lease = unique("make-run")
    settings.write_text(
        yaml.safe_dump(
            {
                **dev_objects.DEV_SETTINGS,
                "reapIntervalSeconds": 2,
                "leaderElection": {"namespace": "default", "leaseName": lease},
            }
        )
    )
    port = world.ctx.picker.pick()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ATOMIC_GANG_"))}
    env = {
        **base,
        **aws_env(world.ctx),
        "KUBECONFIG": str(world.ctx.admin_kubeconfig()),  # "the current kubeconfig"
        "ATOMIC_GANG_PROVISIONER_HTTP_HOST": "127.0.0.1",
        "ATOMIC_GANG_PROVISIONER_HTTP_PORT": str(port),
        # Read by this test on 127.0.0.1 (the reader-token rule: tests/e2e/cluster).
        "ATOMIC_GANG_PROVISIONER_METRICS_AUTH": "none",
    }
    log = (tmp_path / "make-run.log").open("ab")
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), "run", f"CONFIG={settings}"],
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,  # make and the controller: one group to stop
    )
    try:
        wait_for(lambda: reaper_sweeps(port) >= 1, timeout=90, what="the controller sweeping")
        assert world.lease_holder(lease), "it leads under the settings file's lease"
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # make forwards it too: two SIGTERMs close together
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            # Fail here, not in the next tests: a live controller would reconcile their pools.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        finally:
            log.close()

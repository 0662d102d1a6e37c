"""Invalid settings stop start-up with a clear message (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.jobs import OTHER_ROLE, ROLE


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "atomic_gang_webhook"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        pytest.param(
            "defaults: {region: us-east-1}\nlimits: {maxGangSize: -3}\n",
            "limits.maxGangSize",
            id="bad-limit",
        ),
        pytest.param("clusterName: x\n", "defaults.region", id="missing-region"),
        pytest.param(
            "clusterName: my.cluster\ndefaults: {region: us-east-1}\n",
            "clusterName 'my.cluster' is not a valid EKS cluster name (EKS allows",
            id="cluster-name",
        ),
        pytest.param("defaults: {region: us-east-1}\nbogus: 1\n", "bogus", id="unknown-key"),
        pytest.param(
            "defaults: {region: us-east-1}\nintegrationMode: job\n",
            "integrationMode",
            id="integration-mode",
        ),
        pytest.param(
            f"defaults: {{region: us-east-1, nodeRoleArn: '{ROLE}'}}\n"
            f"allowedNodeRoleArns: ['{OTHER_ROLE}']\n",
            f"defaults.nodeRoleArn {ROLE!r} is not in allowedNodeRoleArns",
            id="default-role-not-allowed",
        ),
    ],
)
def test_bad_settings_exit_2(tmp_path: Path, yaml_text: str, needle: str) -> None:
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml_text)
    result = _start({"ATOMIC_GANG_CONFIG": str(cfg)})
    assert result.returncode == 2
    assert needle in result.stderr


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        pytest.param({"ATOMIC_GANG_WEBHOOK_PORT": "99999"}, "port", id="bad-port"),
        pytest.param(
            {"ATOMIC_GANG_WEBHOOK_CERT_FILE": "/nonexistent/none.crt"},
            "TLS",
            id="missing-certificate",
        ),
        pytest.param(
            {"ATOMIC_GANG_WEBHOOK_CERTFILE": "/x"},
            "did you mean ATOMIC_GANG_WEBHOOK_CERT_FILE",
            id="misspelt-variable-not-ignored",
        ),
    ],
)
def test_bad_server_env_exit_2(tmp_path: Path, env: dict[str, str], needle: str) -> None:
    cfg = tmp_path / "s.yaml"
    cfg.write_text("defaults: {region: us-east-1}\n")
    result = _start({"ATOMIC_GANG_CONFIG": str(cfg), **env})
    assert result.returncode == 2
    assert needle in result.stderr


@pytest.mark.parametrize("name", ["my_cluster", "c" * 100])
def test_an_eks_cluster_name_passes_start_up_checks(tmp_path: Path, name: str) -> None:
    """The settings pass; start-up stops at the next step (no certificate), not on the name."""
    cfg = tmp_path / "s.yaml"
    cfg.write_text(f"clusterName: {name}\ndefaults: {{region: us-east-1}}\n")
    missing = str(tmp_path / "absent.crt")
    result = _start(
        {
            "ATOMIC_GANG_CONFIG": str(cfg),
            "ATOMIC_GANG_WEBHOOK_CERT_FILE": missing,
            "ATOMIC_GANG_WEBHOOK_KEY_FILE": missing,
        }
    )
    assert result.returncode == 2, result.stderr
    assert "absent.crt" in result.stderr
    assert "clusterName" not in result.stderr

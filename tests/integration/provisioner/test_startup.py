"""Invalid settings stop the provisioner's start-up (exit 2) with a message naming
the field, before any client to the apiserver or EC2 is built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from atomic_gang_provisioner.main import main
from tests.support.jobs import OTHER_ROLE, ROLE

VALID = "clusterName: c\ndefaults: {region: us-east-1}\n"


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ATOMIC_GANG_", "AWS_", "KUBERNETES_")) and k != "KUBECONFIG"
    }
    return subprocess.run(
        [sys.executable, "-m", "atomic_gang_provisioner"],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _main_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> tuple[object, str]:
    """``main()`` in this process (a subprocess per case cost ~1.4 s each in the fast
    tier): the exit code and stderr, with only ``env`` of our variables set."""
    for name in list(os.environ):
        if name.startswith(("ATOMIC_GANG_", "AWS_", "KUBERNETES_")) or name == "KUBECONFIG":
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main([])
    return exit_.value.code, capsys.readouterr().err


def _config(tmp_path: Path, text: str) -> str:
    cfg = tmp_path / "settings.yaml"
    cfg.write_text(text)
    return str(cfg)


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        pytest.param("defaults: {region: us-east-1}\n", "clusterName", id="missing-cluster"),
        pytest.param("clusterName: c\n", "defaults.region", id="missing-region"),
        pytest.param(VALID + "bogus: 1\n", "bogus", id="unknown-key"),
        pytest.param(VALID + "joinDeadlineSeconds: -5\n", "joinDeadlineSeconds", id="deadline"),
        pytest.param(
            VALID + "acquireAttemptsBeforeRetry: 0\n", "acquireAttemptsBeforeRetry", id="attempts"
        ),
        pytest.param(
            VALID + "maxConcurrentPoolReconciles: 0\n",
            "maxConcurrentPoolReconciles",
            id="pool-reconciles",
        ),
        pytest.param(
            VALID + "acquireRetry: {backoffBaseSeconds: 10, backoffMaxSeconds: 1}\n",
            "backoffMaxSeconds",
            id="backoff-base-above-cap",
        ),
        pytest.param(
            VALID + "leaderElection: {leaseDurationSeconds: 1, renewDeadlineSeconds: 5}\n",
            "renewDeadlineSeconds",
            id="lease-timings",
        ),
        pytest.param(VALID + "limits: {maxGangSize: -3}\n", "limits.maxGangSize", id="bad-limit"),
        pytest.param(VALID + "integrationMode: job\n", "integrationMode", id="integration-mode"),
        pytest.param(
            "clusterName: c\n"
            f"defaults: {{region: us-east-1, nodeRoleArn: '{ROLE}'}}\n"
            f"allowedNodeRoleArns: ['{OTHER_ROLE}']\n",
            f"defaults.nodeRoleArn {ROLE!r} is not in allowedNodeRoleArns",
            id="default-role-not-allowed",
        ),
        pytest.param("clusterName: [\n", "settings", id="not-yaml"),
        pytest.param(
            "clusterName: _x\ndefaults: {region: us-east-1}\n",
            "clusterName '_x' is not a valid EKS cluster name (EKS allows 1-100 characters",
            id="cluster-name",
        ),
    ],
)
def test_bad_settings_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    yaml_text: str,
    needle: str,
) -> None:
    code, err = _main_in_process(
        monkeypatch, capsys, {"ATOMIC_GANG_CONFIG": _config(tmp_path, yaml_text)}
    )
    assert code == 2, err
    assert err.startswith("atomic-gang-provisioner: ")
    assert needle in err


def test_bad_settings_exit_2_as_a_real_process(tmp_path: Path) -> None:
    """The same path as the in-process cases above, through ``python -m``."""
    result = _start({"ATOMIC_GANG_CONFIG": _config(tmp_path, VALID + "bogus: 1\n")})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("atomic-gang-provisioner: ")
    assert "bogus" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_settings_file_exit_2(tmp_path: Path) -> None:
    result = _start({"ATOMIC_GANG_CONFIG": str(tmp_path / "absent.yaml")})
    assert result.returncode == 2
    assert "absent.yaml" in result.stderr


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        pytest.param({"ATOMIC_GANG_PROVISIONER_HTTP_PORT": "99999"}, "http_port", id="port"),
        pytest.param(
            {"ATOMIC_GANG_PROVISIONER_HEALTH_PORT": "8080"},
            "health_port 8080 is http_port too",
            id="probes-on-the-metrics-port",
        ),
        pytest.param({"ATOMIC_GANG_PROVISIONER_LOG_LEVEL": "chatty"}, "log_level", id="log-level"),
        pytest.param(
            {"ATOMIC_GANG_PROVISIONER_WORKLOAD_WORKERS": "0"}, "workload_workers", id="workers"
        ),
        pytest.param(
            {"ATOMIC_GANG_PROVISIONER_RESYNC_SECONDS": "-1"}, "resync_seconds", id="resync"
        ),
    ],
)
def test_bad_server_env_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    needle: str,
) -> None:
    code, err = _main_in_process(
        monkeypatch, capsys, {"ATOMIC_GANG_CONFIG": _config(tmp_path, VALID), **env}
    )
    assert code == 2, err
    assert "ATOMIC_GANG_PROVISIONER_" in err
    assert needle in err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        pytest.param({"ATOMIC_GANG_PROVISIONER_KUBECONFIG": "absent"}, "kubeconfig", id="absent"),
        pytest.param({"KUBECONFIG": ""}, "not running in a cluster", id="no-cluster"),
    ],
)
def test_no_usable_kube_config_exits_2(tmp_path: Path, extra: dict[str, str], needle: str) -> None:
    env = {"ATOMIC_GANG_CONFIG": _config(tmp_path, VALID), **extra}
    if "ATOMIC_GANG_PROVISIONER_KUBECONFIG" in env:
        env["ATOMIC_GANG_PROVISIONER_KUBECONFIG"] = str(tmp_path / "absent.kubeconfig")
    result = _start(env)
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr
    assert "ATOMIC_GANG_PROVISIONER_KUBECONFIG" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_misspelt_env_variable_is_not_ignored(tmp_path: Path) -> None:
    result = _start(
        {
            "ATOMIC_GANG_CONFIG": _config(tmp_path, VALID),
            "ATOMIC_GANG_PROVISIONER_KUBECONFG": "/x",
        }
    )
    assert result.returncode == 2, result.stderr
    assert "did you mean ATOMIC_GANG_PROVISIONER_KUBECONFIG" in result.stderr


class _Discovery(BaseHTTPRequestHandler):
    """An apiserver's discovery of Kueue's API group, nothing else (the answer is set
    on the server as ``kueue_versions``; None: the group is not served)."""

    def do_GET(self) -> None:
        versions = getattr(self.server, "kueue_versions", None)
        if self.path.split("?")[0] != "/apis/kueue.x-k8s.io" or versions is None:
            self._answer(404, {"kind": "Status", "status": "Failure", "code": 404})
            return
        listed = [{"groupVersion": f"kueue.x-k8s.io/{v}", "version": v} for v in versions]
        self._answer(200, {"kind": "APIGroup", "name": "kueue.x-k8s.io", "versions": listed})

    def _answer(self, code: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: object) -> None:
        return None


@pytest.mark.parametrize(
    ("versions", "needles"),
    [
        pytest.param(None, ("serves no kueue.x-k8s.io API (Kueue is not installed)",), id="none"),
        pytest.param(
            ["v1beta1"],
            ("serves kueue.x-k8s.io v1beta1 but not v1beta2", "kueue.x-k8s.io/v1beta2"),
            id="v1beta1-only",
        ),
    ],
)
def test_a_kueue_without_the_v1beta2_api_stops_the_start_naming_api_and_versions(
    tmp_path: Path, versions: list[str] | None, needles: tuple[str, ...]
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Discovery)
    server.kueue_versions = versions  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    try:
        result = _start(
            {
                "ATOMIC_GANG_CONFIG": _config(tmp_path, VALID),
                "ATOMIC_GANG_PROVISIONER_KUBECONFIG": str(kubeconfig),
            }
        )
    finally:
        server.shutdown()
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("atomic-gang-provisioner: "), result.stderr
    for needle in (*needles, "Kueue v0.18.3 or newer (tested: v0.18.3, v0.19.1)"):
        assert needle in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["my_cluster", "c" * 100])
def test_an_eks_cluster_name_passes_start_up_checks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    """The settings pass; start-up stops at the next step (no kubeconfig), not on the name."""
    config = _config(tmp_path, f"clusterName: {name}\ndefaults: {{region: us-east-1}}\n")
    missing = str(tmp_path / "no-kubeconfig")
    code, err = _main_in_process(
        monkeypatch,
        capsys,
        {"ATOMIC_GANG_CONFIG": config, "ATOMIC_GANG_PROVISIONER_KUBECONFIG": missing},
    )
    assert code == 2, err
    assert "no-kubeconfig" in err
    assert "clusterName" not in err

"""Both Dockerfiles' install steps, replayed in a clean venv; each entrypoint really starts.

The image's venv is built exactly by the Dockerfile's RUN lines (see
replay.py), then: ``pip check`` finds nothing but the other service's
dependencies missing, ``--help`` works, bad settings exit 2 (fail closed),
and a real start serves: the webhook over TLS, the controller against the
local control plane. The real start runs as in the pod: the runtime stage's
ENV, cwd and HOME at the image root (UID 65532 has no passwd entry, so HOME is
``/``), TMPDIR on a scratch dir (the chart's ``/tmp`` emptyDir), and nothing
under the image root may change: the read-only root filesystem, checked.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import trustme
import yaml

from tests.e2e.conftest import LocalStack
from tests.e2e.docker.lock import NOT_NEEDED
from tests.e2e.docker.replay import replay
from tests.integration.docker.dockerfile import ENTRYPOINTS, REPO_ROOT, SERVICES, dockerfile
from tests.support.jobs import gang_job
from tests.support.reviews import body
from tests.support.wait import wait_for
from tests.support.webhook_proc import free_port

pytestmark = pytest.mark.e2e
Snapshot = dict[str, tuple[int, int, int]]  # path under the root -> (mode, size, mtime_ns)
CRD = REPO_ROOT / "charts/atomic-gang-provisioner/crds/gangnodepools.atomic-gang.k8s.aws.yaml"
SETTINGS = {
    "clusterName": "replay",
    "controllerName": "atomic-gang.k8s.aws/docker-replay",  # acts on no real AdmissionCheck
    "defaults": {"region": "us-east-1"},
    "leaderElection": {"enabled": False},
}


@pytest.fixture(scope="module", params=SERVICES)
def image(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The replayed image root; ``<root>/opt/venv`` is the runtime venv."""
    service: str = request.param
    root = tmp_path_factory.mktemp(f"image-{service}")
    replay(dockerfile(service), root)
    return root


def _service(image: Path) -> str:
    return re.sub(r"\d+$", "", image.name.removeprefix("image-"))


def _clean_env(**extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "PATH")}
    return {**keep, **extra}


def _pod_env(image: Path, scratch: Path, **extra: str) -> dict[str, str]:
    """The runtime stage's ENV (but PATH), HOME at the image's ``/``, TMPDIR on the emptyDir."""
    runtime: dict[str, str] = {}
    for env in dockerfile(_service(image)).stage("runtime").all("ENV"):
        runtime |= dict(pair.partition("=")[::2] for pair in shlex.split(env))
    runtime.pop("PATH")
    return {**_clean_env(**extra), **runtime, "HOME": str(image), "TMPDIR": str(scratch)}


def _snapshot(root: Path) -> Snapshot:
    out: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = Path(dirpath) / name
            st = path.lstat()
            out[str(path.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def _changes(before: Snapshot, after: Snapshot) -> list[str]:
    paths = before.keys() | after.keys()
    return sorted(p for p in paths if before.get(p) != after.get(p))


def _run(image: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    exe = image / "opt" / "venv" / "bin" / ENTRYPOINTS[_service(image)]
    argv = [str(exe), *args]
    return subprocess.run(
        argv, env=_clean_env(**env), capture_output=True, text=True, check=False, timeout=120
    )


def test_venv_is_complete_and_self_contained(image: Path) -> None:
    venv = image / "opt" / "venv"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "check"],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    missing = {ln.split(" requires ")[1].split(",")[0] for ln in lines if "not installed" in ln}

    assert [ln for ln in lines if "not installed" not in ln] == []  # no version conflict
    assert missing <= NOT_NEEDED[_service(image)]
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import atomic_gang; print(atomic_gang.__file__)"],
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(venv)), "the service must come from the image's venv"
    assert not (venv / "bin" / "pip").exists()


def test_help(image: Path) -> None:
    done = _run(image, "--help")

    assert done.returncode == 0, done.stderr
    assert f"usage: {ENTRYPOINTS[_service(image)]}" in done.stdout


def test_bad_settings_fail_closed_with_exit_2(image: Path, tmp_path: Path) -> None:
    bad = tmp_path / "settings.yaml"
    bad.write_text(yaml.safe_dump({**SETTINGS, "defualts": {"region": "us-east-1"}}))

    done = _run(image, "--config", str(bad))

    assert done.returncode == 2
    assert "defualts: unknown setting" in done.stderr


@contextmanager
def _webhook(image: Path, tmp_path: Path, settings: Path, scratch: Path) -> Iterator[httpx.Client]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "tls.crt"))
    cert.private_key_pem.write_to_path(str(tmp_path / "tls.key"))
    port = free_port()
    exe = image / "opt" / "venv" / "bin" / "atomic-gang-webhook"
    env = _pod_env(
        image,
        scratch,
        ATOMIC_GANG_WEBHOOK_HOST="127.0.0.1",
        ATOMIC_GANG_WEBHOOK_PORT=str(port),
        ATOMIC_GANG_WEBHOOK_CERT_FILE=str(tmp_path / "tls.crt"),
        ATOMIC_GANG_WEBHOOK_KEY_FILE=str(tmp_path / "tls.key"),
    )
    proc = subprocess.Popen([str(exe), "--config", str(settings)], env=env, cwd=image)
    try:
        verify = ssl.create_default_context(cafile=str(_ca(ca, tmp_path)))
        with httpx.Client(base_url=f"https://127.0.0.1:{port}", verify=verify) as c:
            yield c
    finally:
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it caught.
        assert proc.wait(timeout=20) in (0, -signal.SIGTERM)


def _ca(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


def _probe_ok(client: httpx.Client, path: str) -> bool:
    try:
        return client.get(path).status_code == 200
    except httpx.TransportError:
        return False


def test_real_start(image: Path, tmp_path: Path, local_stack: LocalStack) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(yaml.safe_dump(SETTINGS))
    scratch = tmp_path / "emptydir-tmp"
    scratch.mkdir()
    before = _snapshot(image)
    assert "opt/venv/bin/python" in before

    if _service(image) == "webhook":
        with _webhook(image, tmp_path, settings, scratch) as client:
            wait_for(lambda: _probe_ok(client, "/readyz"), timeout=30, what="webhook /readyz")
            bad = gang_job(annotations={"atomic-gang.k8s.aws/count": "many"})
            review = client.post("/validate/batch/v1/job", content=body(bad)).json()
            assert review["response"]["allowed"] is False
    else:
        _controller_start(image, settings, local_stack, scratch)

    assert _changes(before, _snapshot(image)) == [], "a read-only root filesystem would refuse"


def _controller_start(image: Path, settings: Path, local_stack: LocalStack, scratch: Path) -> None:
    kube = local_stack.kube
    if kube.run("get", "crd", "gangnodepools.atomic-gang.k8s.aws", check=False).returncode:
        kube.run("create", "-f", str(CRD))
    port = free_port()
    exe = image / "opt" / "venv" / "bin" / "atomic-gang-provisioner"
    env = _pod_env(
        image,
        scratch,
        ATOMIC_GANG_PROVISIONER_KUBECONFIG=str(local_stack.ctx.admin_kubeconfig()),
        ATOMIC_GANG_PROVISIONER_HTTP_HOST="127.0.0.1",
        ATOMIC_GANG_PROVISIONER_HTTP_PORT=str(port),
        AWS_ACCESS_KEY_ID="replay",
        AWS_SECRET_ACCESS_KEY="replay",
    )
    proc = subprocess.Popen([str(exe), "--config", str(settings)], env=env, cwd=image)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            wait_for(lambda: _probe_ok(client, "/readyz"), timeout=60, what="controller /readyz")
            metrics = client.get("/metrics").text
        assert "atomic_gang" in metrics
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=40)
    assert code == 0

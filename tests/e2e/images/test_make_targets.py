"""``make helm-package``, ``make docker-build`` and ``make docker-push``, run as a user runs
them, against a real registry on loopback (distribution's, built by hack/build-bins.sh).

The images are built with buildah (no Docker here) on the local stand-in for the
pinned Python base (``PYTHON_IMAGE``, as ``make images`` does), in a container store
of the test's own, pushed without TLS (``TLS_VERIFY=false``: the registry is local),
then pulled back by digest into another store, where each image's entry point answers
``--help``. ``PLATFORMS`` makes ``docker-push`` push a multi-architecture index
(here of the one architecture this machine runs without an emulator).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from atomic_gang_devstack.bins import REPO_ROOT, Bins
from atomic_gang_devstack.images import Images
from tests.e2e.kube import wait_for
from tests.integration.chart.render import REQUIRED
from tests.support.webhook_proc import free_port

pytestmark = pytest.mark.e2e
ENTRYPOINTS = {"": "atomic-gang-provisioner", "-webhook": "atomic-gang-webhook"}
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFESTS = ", ".join(
    [
        INDEX,
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)


@dataclass
class Registry:
    port: int
    env: dict[str, str]  # what `make docker-*` runs with

    def repo(self, name: str) -> str:
        return f"127.0.0.1:{self.port}/{name}"

    def manifest(self, name: str, tag: str) -> httpx.Response:
        url = f"http://127.0.0.1:{self.port}/v2/{name}/manifests/{tag}"
        return httpx.get(url, headers={"Accept": MANIFESTS}, timeout=10)


def _store(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    conf = root / "storage.conf"
    conf.write_text(
        f'[storage]\ndriver = "vfs"\ngraphroot = "{root}/graph"\nrunroot = "{root}/run"\n'
    )
    return conf


def _run(argv: list[str], env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv}: {done.stderr[-3000:]}"
    return done.stdout


def make(target: str, registry: Registry, **variables: str) -> str:
    settings = [f"{k}={v}" for k, v in variables.items()]
    return _run(["make", "--no-print-directory", "-C", str(REPO_ROOT), target, *settings],
                registry.env)  # fmt: skip


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    bins = Bins.load()
    bins.ensure(("registry",))  # built when missing, never skipped
    root = tmp_path_factory.mktemp("registry")
    port = free_port()
    config = root / "config.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }))  # fmt: skip
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "CONTAINERS_"))}
    env = base_env | {
        "CONTAINERS_STORAGE_CONF": str(_store(root / "build-store")),
        "BUILDAH_ISOLATION": "chroot",
        "TLS_VERIFY": "false",
    }
    proc = subprocess.Popen(
        [str(bins.path("registry")), "serve", str(config)],
        stdout=(root / "registry.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: _answers(f"http://127.0.0.1:{port}/v2/"), timeout=30, what="the registry")
        # The pinned base's local stand-in, copied into the test's store (make images's own
        # store is the dev stack's; a user's buildah would pull python:3.11-slim instead).
        images = Images(bins)
        base = images.base()
        archive = root / "base.tar"
        images.buildah("push", base, f"docker-archive:{archive}:{base}")
        _run(["buildah", "pull", f"docker-archive:{archive}"], env)
        yield Registry(port, env | {"PYTHON_IMAGE": base})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)  # gigabytes of vfs layers


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_helm_package_makes_a_chart_that_installs_the_same(tmp_path: Path) -> None:
    out = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), "helm-package"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    version = yaml.safe_load((REPO_ROOT / "charts/atomic-gang-provisioner/Chart.yaml").read_text())
    package = REPO_ROOT / "bin" / f"atomic-gang-provisioner-{version['version']}.tgz"
    assert package.is_file(), out.stdout
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(REQUIRED))
    helm = Bins.load().path("helm")
    rendered = subprocess.run(
        [str(helm), "template", "agp", str(package), "--values", str(values)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    kinds = {d["kind"] for d in yaml.safe_load_all(rendered.stdout) if d}
    assert {"Deployment", "ValidatingWebhookConfiguration", "ClusterRole"} <= kinds
    crds = subprocess.run(["tar", "-tzf", str(package)], capture_output=True, text=True, check=True)
    assert "atomic-gang-provisioner/crds/gangnodepools.atomic-gang.k8s.aws.yaml" in crds.stdout


def _pulled_help(registry: Registry, ref: str, entrypoint: str, store: Path) -> str:
    env = registry.env | {"CONTAINERS_STORAGE_CONF": str(_store(store))}
    _run(["buildah", "pull", "--tls-verify=false", ref], env)
    container = _run(["buildah", "from", ref], env).strip()
    try:
        return _run(
            ["buildah", "run", container, "--", f"/opt/venv/bin/{entrypoint}", "--help"], env
        )
    finally:
        _run(["buildah", "rm", container], env)


def test_docker_build_and_push_then_each_image_runs_pulled_by_digest(
    registry: Registry, tmp_path: Path
) -> None:
    img = f"{registry.repo('atomic-gang-provisioner')}:e2e"
    make("docker-build", registry, IMG=img)
    make("docker-push", registry, IMG=img)
    for suffix, entrypoint in ENTRYPOINTS.items():
        got = registry.manifest(f"atomic-gang-provisioner{suffix}", "e2e")
        assert got.status_code == 200, got.text
        digest = got.headers["Docker-Content-Digest"]
        ref = f"{registry.repo('atomic-gang-provisioner' + suffix)}@{digest}"
        said = _pulled_help(registry, ref, entrypoint, tmp_path / f"pull{suffix}")
        assert said.startswith(f"usage: {entrypoint}"), said


def test_docker_push_with_platforms_pushes_a_multi_architecture_index(
    registry: Registry, tmp_path: Path
) -> None:
    img = f"{registry.repo('agp-multi')}:e2e"
    make("docker-build", registry, IMG=img, PLATFORMS="linux/amd64")
    assert registry.manifest("agp-multi", "e2e").status_code == 404  # build only builds
    make("docker-push", registry, IMG=img, PLATFORMS="linux/amd64")
    for suffix in ENTRYPOINTS:
        got = registry.manifest(f"agp-multi{suffix}", "e2e")
        assert got.status_code == 200, got.text
        assert got.headers["Content-Type"] == INDEX
        platforms = [m["platform"] for m in json.loads(got.text)["manifests"]]
        assert [(p["os"], p["architecture"]) for p in platforms] == [("linux", "amd64")]

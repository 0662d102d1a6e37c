"""The make targets of docs/development.md: ``make build`` (the wheel, checked),
``make run`` (the controller with a settings file against the current kubeconfig's
cluster), ``make manifests`` / ``make generate`` (the CRD from the models) and the
story ``make demo STORY=...`` tells (what it would run)."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_provisioner.api.crd import render

CRD = REPO_ROOT / "charts/atomic-gang-provisioner/crds/gangnodepools.atomic-gang.k8s.aws.yaml"


def make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ATOMIC_GANG_", "MAKE")) and k != "KUBECONFIG"
    }
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_make_build_builds_and_checks_the_wheel() -> None:
    done = make("build")
    assert done.returncode == 0, done.stderr
    (wheel,) = (REPO_ROOT / "dist").glob("atomic_gang_provisioner-*.whl")
    assert "4 packages, installs and runs" in done.stdout
    with zipfile.ZipFile(wheel) as zf:
        tops = {n.split("/", 1)[0] for n in zf.namelist()}
    assert {"atomic_gang", "atomic_gang_webhook", "atomic_gang_provisioner"} < tops
    assert not {"tests", "atomic_gang_devstack", "atomic_gang_fakeaws"} & tops


def test_make_run_needs_a_settings_file() -> None:
    done = make("run")
    assert done.returncode != 0
    assert "set CONFIG=<settings.yaml>" in done.stderr


def test_make_run_reads_the_settings_file(tmp_path: Path) -> None:
    bad = tmp_path / "settings.yaml"
    bad.write_text("clusterName: c\ndefaults: {region: us-east-1}\njoinDeadlineSeconds: -1\n")
    done = make("run", f"CONFIG={bad}")
    assert done.returncode != 0
    assert "joinDeadlineSeconds" in done.stderr


@pytest.mark.parametrize(
    ("kubeconfig", "named"),
    [
        pytest.param(None, "home/.kube/config", id="default-kubeconfig"),
        pytest.param("elsewhere.kubeconfig", "elsewhere.kubeconfig", id="KUBECONFIG"),
    ],
)
def test_make_run_uses_the_current_kubeconfig(
    tmp_path: Path, kubeconfig: str | None, named: str
) -> None:
    """Past valid settings the controller loads the kubeconfig; none exists here, so
    it stops naming the one it was given (the current one, or ~/.kube/config)."""
    good = tmp_path / "settings.yaml"
    good.write_text("clusterName: c\ndefaults: {region: us-east-1}\n")
    env = {"HOME": str(tmp_path / "home")}
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(tmp_path / kubeconfig)
    done = make("run", f"CONFIG={good}", env=env)
    assert done.returncode != 0
    assert f"cannot load kubeconfig $KUBECONFIG={tmp_path}/{named}" in done.stderr, done.stderr


@pytest.mark.parametrize("target", ["manifests", "generate"])  # aliases of crd / helm-sync
def test_manifests_and_generate_regenerate_the_crd(target: str) -> None:
    done = make(target)
    assert done.returncode == 0, done.stderr
    assert CRD.read_text() == render()


@pytest.mark.parametrize(
    ("args", "command"),
    [
        pytest.param((), "-m atomic_gang_devstack.demo", id="job-by-default"),
        pytest.param(("STORY=jobset",), "-m atomic_gang_devstack.demo --story jobset", id="jobset"),
        pytest.param(
            ("STORY=trainjob",), "-m atomic_gang_devstack.demo --story trainjob", id="trainjob"
        ),
    ],
)
def test_make_demo_passes_the_story(args: tuple[str, ...], command: str) -> None:
    """``make -n``: what the target would run, without starting the stack."""
    done = make("-n", "demo", *args)
    assert done.returncode == 0, done.stderr
    demo_line = done.stdout.splitlines()[-1]
    assert demo_line.rstrip().endswith(command), demo_line


def test_ci_runs_make_test_and_make_test_runs_each_tier_on_its_workers() -> None:
    """What CI waits for: the binaries, the images and lint side by side, then the tiers
    below e2e and the e2e tier each spread over workers, each listing its slowest tests."""
    assert (REPO_ROOT / ".ci" / "run").read_text().rstrip().endswith("exec make test")
    done = make("-n", "test", "TEST_WORKERS=2", "E2E_WORKERS=3")
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stdout.splitlines() if "prepare-tests.sh" in ln or "pytest" in ln]
    assert len(lines) == 3, done.stdout
    prepare, below, e2e = lines
    assert prepare.endswith("hack/prepare-tests.sh")
    assert "-n 2 --durations=25 tests/unit tests/integration" in below
    assert "-n 3 --dist loadgroup --durations=25 tests/e2e" in e2e

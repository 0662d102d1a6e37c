"""``helm lint --strict`` passes and the packaged chart carries the CRD and the schema."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import yaml

from tests.integration.chart.render import CHART, KUBE_VERSION, REQUIRED

CI_VALUES = CHART / "ci" / "required-values.yaml"


def test_helm_lint_strict(helm: Path) -> None:
    done = subprocess.run(
        [
            str(helm),
            "lint",
            str(CHART),
            "--strict",
            "--kube-version",
            KUBE_VERSION,
            "-f",
            str(CI_VALUES),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_ci_values_are_the_required_values() -> None:
    assert yaml.safe_load(CI_VALUES.read_text()) == REQUIRED


def test_package_carries_crd_and_schema(helm: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(helm), "package", str(CHART), "--destination", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (tgz,) = tmp_path.glob("atomic-gang-provisioner-*.tgz")
    with tarfile.open(tgz) as tar:
        names = set(tar.getnames())

    prefix = "atomic-gang-provisioner/"
    assert prefix + "crds/gangnodepools.atomic-gang.k8s.aws.yaml" in names
    assert prefix + "values.schema.json" in names
    assert prefix + "templates/NOTES.txt" in names
    assert not [n for n in names if n.startswith(prefix + "ci/")]


def test_template_without_kube_version_knows_a_real_kube_version(helm: Path) -> None:
    """helm is built with its release ldflags (hack/build-bins.sh): without them `helm
    template` assumes Kubernetes v1.20 and the chart's kubeVersion >=1.30 refuses."""
    done = subprocess.run(
        [str(helm), "template", "agp", str(CHART), "-f", str(CI_VALUES)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "kind: Deployment" in done.stdout
    version = subprocess.run(
        [str(helm), "version", "--template", "{{.Version}}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert version.stdout.startswith("v3."), version.stdout

"""The user guide's JobSet example is a JobSet the real CRD (jobset v0.12.0, the version
Kueue v0.19.1 names) accepts, and one every gang rule passes: the docs cannot drift from
either."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from atomic_gang.gang_object import review
from atomic_gang_devstack.bins import REPO_ROOT, Bins
from atomic_gang_provisioner.kube import KubeClient
from tests.integration.kube.conftest import ControlPlane, install_crd
from tests.support.jobs import settings

pytestmark = pytest.mark.kube
GUIDE = REPO_ROOT / "docs" / "user-guide.md"


def guide_example() -> dict[str, object]:
    section = GUIDE.read_text(encoding="utf-8").split("\n## JobSets", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    found: dict[str, object] = yaml.safe_load(block)
    return found


def test_the_guides_jobset_passes_the_crd_and_every_gang_rule(
    control_plane: ControlPlane, client: KubeClient
) -> None:
    bins = Bins.load()
    bins.ensure_sources(("jobset",))
    bases = bins.source("jobset") / "config" / "components" / "crd" / "bases"
    install_crd(client, yaml.safe_load((bases / "jobset.x-k8s.io_jobsets.yaml").read_text()))
    example = guide_example()
    found = review(example, settings(), namespace="default")
    assert found is not None
    assert (found.violations, found.warnings) == ((), ())
    done = subprocess.run(
        [str(bins.path("kubectl")), "--kubeconfig", str(control_plane.kubeconfig), "create",
         "--dry-run=server", "-n", "default", "-o", "json", "-f", "-"],
        input=json.dumps(example), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    roles = [rj["name"] for rj in created["spec"]["replicatedJobs"]]
    assert roles == ["driver", "workers"]

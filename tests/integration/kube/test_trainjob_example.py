"""The user guide's TrainJob example is a TrainJob the real Trainer CRD (Kubeflow Trainer
v2.2.1, the version Kueue v0.19.1's go.mod names) accepts, and one every gang rule
passes: the docs cannot drift from either. And the chart's registration, on a real API
server with the Trainer's CRDs, sends a TrainJob or a runtime to the webhook exactly
when the webhook has something to judge in it."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from atomic_gang import keys as k
from atomic_gang.gang_object import review
from atomic_gang_devstack.bins import REPO_ROOT, Bins
from atomic_gang_provisioner.kube import KubeClient
from tests.integration.chart.render import REQUIRED, helm_path, render
from tests.integration.kube.conftest import ControlPlane, install_crd
from tests.support.jobs import PINNED_POD, runtime_patch, settings
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube
GUIDE = REPO_ROOT / "docs" / "user-guide.md"
MODULE = "github.com/kubeflow/trainer/v2"
PROBE = "agp-trainer-probe"  # a registration of our own, calling nothing that answers


def guide_example() -> dict[str, Any]:
    section = GUIDE.read_text(encoding="utf-8").split("\n## TrainJobs", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    found: dict[str, Any] = yaml.safe_load(block)
    return found


def trainer_module() -> Path:
    """The Trainer module's source, at the version the pinned Kueue requires."""
    bins = Bins.load()
    bins.ensure_sources(("kueue",))
    gomod = (bins.source("kueue") / "go.mod").read_text(encoding="utf-8")
    (version,) = re.findall(rf"^\s*{re.escape(MODULE)} (v\S+)$", gomod, flags=re.M)
    done = subprocess.run(
        ["go", "mod", "download", "-json", f"{MODULE}@{version}"],
        capture_output=True, text=True, timeout=600, check=True, cwd=bins.root,
    )  # fmt: skip
    return Path(json.loads(done.stdout)["Dir"])


@pytest.fixture(scope="module")
def trainer(client: KubeClient) -> Path:
    """The Trainer's CRDs installed; its module source."""
    module = trainer_module()
    for name in ("trainjobs", "trainingruntimes", "clustertrainingruntimes"):
        crd = module / "manifests" / "base" / "crds" / f"trainer.kubeflow.org_{name}.yaml"
        install_crd(client, yaml.safe_load(crd.read_text(encoding="utf-8")))
    return module


def kubectl(cp: ControlPlane, *argv: str, obj: Any = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Bins.load().path("kubectl")), "--kubeconfig", str(cp.kubeconfig), *argv],
        input=None if obj is None else json.dumps(obj),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def dry_run(cp: ControlPlane, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    ns = ["-n", "default"] if obj["kind"] != "ClusterTrainingRuntime" else []
    return kubectl(cp, "create", "--dry-run=server", *ns, "-o", "json", "-f", "-", obj=obj)


def test_the_guides_trainjob_passes_the_crd_and_every_gang_rule(
    control_plane: ControlPlane, trainer: Path
) -> None:
    example = guide_example()
    found = review(example, settings(), namespace="default")
    assert found is not None
    assert (found.violations, found.warnings) == ((), ())
    done = dry_run(control_plane, example)
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert created["spec"]["runtimeRef"]["name"] == "torch-distributed"
    assert created["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"  # the default
    annotations = created["metadata"]["annotations"]
    assert int(annotations[k.COUNT]) == created["spec"]["trainer"]["numNodes"] == 4
    assert k.GANG_ROLES not in annotations  # the trainer nodes, node, by default
    torch = yaml.safe_load(
        (trainer / "manifests" / "base" / "runtimes" / "torch_distributed.yaml").read_text()
    )
    assert torch["metadata"]["name"] == "torch-distributed"
    roles = [rj["name"] for rj in torch["spec"]["template"]["spec"]["replicatedJobs"]]
    assert roles == ["node"]


@pytest.fixture
def registered(control_plane: ControlPlane, trainer: Path) -> Iterator[None]:
    """The chart's TrainJob and runtime entries, calling a port nobody listens on: a
    request they send fails with the webhook's name; one they do not send is served."""
    vwc = render(helm_path(), REQUIRED).one("ValidatingWebhookConfiguration")
    hooks = [h for h in vwc["webhooks"] if "trainer.kubeflow.org" in h["rules"][0]["apiGroups"]]
    assert len(hooks) == 2
    for hook in hooks:
        hook["clientConfig"] = {"url": "https://127.0.0.1:9/validate/batch/v1/job"}
        hook["timeoutSeconds"] = 2
    probe = {**vwc, "metadata": {"name": PROBE}, "webhooks": hooks}
    done = kubectl(control_plane, "create", "-f", "-", obj=probe)
    assert done.returncode == 0, done.stderr
    try:
        wait_for(
            lambda: "failed calling webhook" in dry_run(control_plane, guide_example()).stderr,
            timeout=30,
            interval=0.2,
            what="the probe registration in force",
        )
        yield
    finally:
        kubectl(control_plane, "delete", "validatingwebhookconfiguration", PROBE)


def _plain(example: dict[str, Any]) -> dict[str, Any]:
    plain = copy.deepcopy(example)
    plain["metadata"]["labels"], plain["metadata"]["annotations"] = {}, {}
    return plain


def _runtime(trainer: Path, kind: str, pod: dict[str, Any] | None = None) -> dict[str, Any]:
    torch = yaml.safe_load(
        (trainer / "manifests" / "base" / "runtimes" / "torch_distributed.yaml").read_text()
    )
    torch["kind"] = kind
    rj = torch["spec"]["template"]["spec"]["replicatedJobs"][0]
    rj["template"]["spec"]["template"]["spec"].update(copy.deepcopy(pod or {}))
    return dict(torch)


def test_the_registration_sends_what_the_webhook_judges_and_nothing_else(
    control_plane: ControlPlane, trainer: Path, registered: None
) -> None:
    example = guide_example()
    unrelated = _plain(example)
    unrelated["spec"]["runtimePatches"] = [
        runtime_patch({"node": {"nodeSelector": {"topology.kubernetes.io/zone": "us-east-1a"}}},
                      manager="example.com/team-a")
    ]  # fmt: skip
    claiming = _plain(example)
    claiming["spec"]["runtimePatches"] = [runtime_patch({"node": PINNED_POD}, manager="x.io/a")]
    keyed_patch = _plain(example)
    patch = runtime_patch({}, manager="x.io/a")
    patch["trainingRuntimeSpec"]["template"]["metadata"] = {"labels": {k.POOL: "pretrain-p4d"}}
    keyed_patch["spec"]["runtimePatches"] = [patch]
    own_labels = _runtime(trainer, "ClusterTrainingRuntime")
    own_labels["metadata"]["labels"][k.POOL] = "pretrain-p4d"
    keyed_runtime = _runtime(trainer, "TrainingRuntime")
    keyed_runtime["spec"]["template"]["metadata"] = {"annotations": {k.COUNT: "4"}}
    tolerate_all = {"tolerations": [{"operator": "Exists"}]}
    cases = {
        # sent: each holds what the webhook judges
        "gang-trainjob": (example, True),
        "claim-in-a-patch": (claiming, True),
        "our-key-in-a-patchs-jobset-metadata": (keyed_patch, True),
        "cluster-runtime-tolerating-all": (
            _runtime(trainer, "ClusterTrainingRuntime", tolerate_all),
            True,
        ),
        "runtime-selecting-a-pool": (
            _runtime(trainer, "TrainingRuntime", {"nodeSelector": {k.POOL: "p"}}),
            True,
        ),
        "our-key-in-a-runtimes-jobset-metadata": (keyed_runtime, True),
        # not sent: nothing of ours in them
        "plain-trainjob": (_plain(example), False),
        "unrelated-patch": (unrelated, False),
        "torch-runtime-as-shipped": (_runtime(trainer, "ClusterTrainingRuntime"), False),
        "namespaced-torch-runtime": (_runtime(trainer, "TrainingRuntime"), False),
        "our-key-on-a-runtimes-own-metadata": (own_labels, False),
    }
    outcomes = {}
    for name, (obj, _) in cases.items():
        done = dry_run(control_plane, obj)
        sent = "failed calling webhook" in done.stderr
        assert sent or done.returncode == 0, (name, done.stderr)
        outcomes[name] = sent
    assert outcomes == {name: sent for name, (_, sent) in cases.items()}

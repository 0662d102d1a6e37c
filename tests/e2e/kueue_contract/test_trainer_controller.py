"""A TrainJob on every supported Kueue, run by the stack's real Kubeflow Trainer and JobSet
controllers. For each runtime the stack installs, Kueue makes one Workload owned by the
TrainJob whose PodSets are those of the JobSet the runtime builds; the Trainer creates
that JobSet (owned by the TrainJob) while the TrainJob is still suspended, and suspended
too; Kueue writes what it admits into a runtime patch of its own on the TrainJob and
unsuspends it; the Trainer applies the patch to the JobSet, whose pods run to completion
on the kwok node with what Kueue admitted. Only the Trainer's ServiceAccount writes the
JobSet (a ValidatingAdmissionPolicy denies everyone else), and nothing of the TrainJob's
own labels and annotations (the queue name, our pool label, our annotations) reaches the
JobSet or its pods. The queue here has no admission check; its flavor's node label stands
in for the podSetUpdates of one (both reach the TrainJob through the same patch).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from atomic_gang import keys
from atomic_gang_devstack import dev_objects
from atomic_gang_devstack import trainer_manifests as tm
from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_devstack.components.kwok import GENERAL_LABEL
from tests.e2e.kube import has_condition
from tests.e2e.system.harness import System
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

TRAINJOBS = "trainjobs.trainer.kubeflow.org"
JOBSETS = "jobsets.jobset.x-k8s.io"
WORKLOADS = "workloads.kueue.x-k8s.io"
ADMISSION = "admissionregistration.k8s.io/v1"
MANAGED_FIELDS = "--show-managed-fields"  # kubectl get leaves them out otherwise
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
KUEUE_PATCH_MANAGER = "kueue.x-k8s.io/manager"  # Kueue's entry in spec.runtimePatches
OUR_PATCH_MANAGER = "atomic-gang.k8s.aws/e2e"  # the test's own (domain-prefixed, as required)
NUM_NODES = 2
# What Kueue makes of each runtime at numNodes 2: the JobSet's replicatedJobs, each one
# Job (replicas 1) of parallelism pods; the trainer nodes are one Indexed Job of numNodes.
POD_SETS = {
    tm.TORCH_RUNTIME: [("node", NUM_NODES)],
    tm.TORCH_WITH_INITIALIZER_RUNTIME: [("dataset-initializer", 1), ("node", NUM_NODES)],
}
# kwok completes a Job's pod this long after it runs (delay and jitter alike: exactly).
KWOK_COMPLETION = {
    "pod-complete.stage.kwok.x-k8s.io/delay": "2s",
    "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "2s",
}
SAMPLE_JOB = REPO_ROOT / "hack" / "demo" / "allreduce-pretrain.yaml"
GANG_ANNOTATIONS = yaml.safe_load(SAMPLE_JOB.read_text())["metadata"]["annotations"]
FLAVOR_NODE_LABELS = {GENERAL_LABEL: "true"}  # the kwok node of the kueue fixture
# The nodeSelector Kueue admits each PodSet with: the flavor's node labels for the trainer
# nodes (they request cpu and memory); none for the initializer, whose container requests
# nothing (a runtime patch cannot set resources), so Kueue assigns it no flavor at all.
ADMITTED_NODE_SELECTOR = {tm.TRAINER_ROLE: FLAVOR_NODE_LABELS, tm.INITIALIZER_ROLE: None}


@pytest.fixture
def held_queue(kueue: System, namespace: str) -> Iterator[str]:
    """A LocalQueue in ``namespace`` on a ClusterQueue of its own (no admission check),
    held (``stopPolicy: Hold``) until the test lets it admit. Its flavor's node labels
    make Kueue's admission carry a nodeSelector."""
    name = f"trainer-{namespace}"[:63]
    quota = {"cpu": "10", "memory": "10Gi"}
    flavor = {
        "apiVersion": dev_objects.KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": FLAVOR_NODE_LABELS},
    }
    cluster_queue = {
        "apiVersion": dev_objects.KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "resourceGroups": [
                {
                    "coveredResources": list(quota),
                    "flavors": [
                        {
                            "name": name,
                            "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()],
                        }
                    ],
                }
            ],
        },
    }
    local_queue = dev_objects.local_queue(namespace, "held")
    local_queue["spec"] = {"clusterQueue": name, "stopPolicy": "Hold"}
    kubectl = kueue.kubectl
    for obj in (flavor, cluster_queue, local_queue):
        kubectl.apply(obj)
    wait_for(
        lambda: has_condition(kubectl.get("clusterqueue", name), "Active"),
        timeout=30,
        what=f"ClusterQueue {name} Active",
    )
    yield "held"
    for kind in ("clusterqueue", "resourceflavor"):
        kubectl.run("delete", kind, name, "--wait=false", check=False)


def release(kueue: System, namespace: str, queue: str) -> None:
    patch = json.dumps({"spec": {"stopPolicy": "None"}})
    kueue.kubectl.run("patch", "localqueue", queue, "-n", namespace, "--type=merge", "-p", patch)


@pytest.fixture
def only_the_trainer_writes_jobsets(kueue: System, namespace: str) -> Iterator[None]:
    """A ValidatingAdmissionPolicy that denies every create or update of a JobSet in
    ``namespace`` (not its status) by anyone but the Trainer controller, in force before
    the block (an admin's dry-run create is denied)."""
    name = f"only-trainer-{namespace}"[:63]
    message = f"only {tm.USERNAME} writes JobSets here"
    policy = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["jobset.x-k8s.io"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["jobsets"],
                    }
                ]
            },
            "validations": [
                {"expression": f"request.userInfo.username == '{tm.USERNAME}'", "message": message}
            ],
        },
    }
    binding = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    kubectl = kueue.kubectl
    kubectl.apply(policy)
    kubectl.apply(binding)
    probe = json.dumps(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "probe", "namespace": namespace},
            "spec": {"replicatedJobs": []},
        }
    )

    def enforced() -> bool:
        done = kubectl.run("create", "--dry-run=server", "-f", "-", stdin=probe, check=False)
        return done.returncode != 0 and message in done.stderr

    wait_for(enforced, timeout=30, what=f"policy {name} enforced")
    yield
    for kind in ("validatingadmissionpolicybinding", "validatingadmissionpolicy"):
        kubectl.run("delete", kind, name, "--wait=false", check=False)


def trainjob(name: str, namespace: str, *, runtime: str, queue: str) -> dict[str, Any]:
    """A suspended TrainJob of ``NUM_NODES`` trainer nodes on ``runtime``, with the queue
    name, our pool label and one of our annotations on its metadata, and a runtime patch
    of the test's own that puts kwok's completion annotations on the trainer nodes' pods."""
    node_pods = {"template": {"spec": {"template": {"metadata": {"annotations": KWOK_COMPLETION}}}}}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {keys.QUEUE_NAME_LABEL: queue, keys.POOL: "trainer-e2e"},
            # Valid gang keys (our webhook reviews TrainJobs), on a queue without our check.
            "annotations": {**GANG_ANNOTATIONS, keys.COUNT: str(NUM_NODES)},
        },
        "spec": {
            "suspend": True,
            "runtimeRef": {"name": runtime},
            "trainer": {
                "numNodes": NUM_NODES,
                "resourcesPerNode": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            },
            "runtimePatches": [
                {
                    "manager": OUR_PATCH_MANAGER,
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {"replicatedJobs": [{"name": tm.TRAINER_ROLE, **node_pods}]}
                        }
                    },
                }
            ],
        },
    }


def owners(obj: dict[str, Any], *path: str) -> list[tuple[str, str]]:
    """(manager, operation) of every managedFields entry that owns ``path`` (fieldsV1 keys:
    ``f:spec``, ``k:{...}``)."""
    found = []
    for entry in obj["metadata"].get("managedFields") or []:
        node = entry.get("fieldsV1") or {}
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            found.append((entry["manager"], entry["operation"]))
    return found


def unsuspended(kueue: System, namespace: str, name: str) -> dict[str, Any] | None:
    tj: dict[str, Any] = kueue.kubectl.get(TRAINJOBS, name, "-n", namespace, MANAGED_FIELDS)
    return tj if tj["spec"]["suspend"] is False else None


def workload_has(kueue: System, namespace: str, name: str, condition: str) -> bool:
    return has_condition(kueue.kubectl.get(WORKLOADS, name, "-n", namespace), condition)


def test_the_stacks_trainer_controller_authenticates_as_its_service_account(
    kueue: System,
) -> None:
    kubeconfig = kueue.ctx.dir / "kubeconfigs" / "trainer.yaml"
    whoami = kueue.kubectl.run("auth", "whoami", f"--kubeconfig={kubeconfig}", "-o", "json")
    user = json.loads(whoami.stdout)["status"]["userInfo"]
    assert user["username"] == tm.USERNAME
    assert set(tm.GROUPS) <= set(user["groups"])


@pytest.mark.parametrize("runtime", list(POD_SETS))
def test_kueue_admits_a_trainjob_and_the_trainer_runs_its_jobset(
    kueue: System,
    namespace: str,
    held_queue: str,
    only_the_trainer_writes_jobsets: None,
    runtime: str,
) -> None:
    kubectl = kueue.kubectl
    kubectl.apply(trainjob("train", namespace, runtime=runtime, queue=held_queue))
    uid = kubectl.get(TRAINJOBS, "train", "-n", namespace)["metadata"]["uid"]

    # Held: one Workload owned by the TrainJob, and the JobSet the Trainer built for it,
    # both suspended.
    wl = wait_for(
        lambda: next(iter(kubectl.items(WORKLOADS, "-n", namespace)), None),
        timeout=60,
        what="the TrainJob's Workload",
    )
    (owner,) = wl["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "TrainJob",
        "train",
        uid,
        True,
    )
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == POD_SETS[runtime]
    jobset = wait_for(
        lambda: kubectl.items(JOBSETS, "-n", namespace, MANAGED_FIELDS),
        timeout=60,
        what="the TrainJob's JobSet",
    )[0]
    assert jobset["metadata"]["name"] == "train"
    (ref,) = jobset["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref["controller"]) == ("TrainJob", uid, True)
    assert jobset["spec"]["suspend"] is True
    assert kubectl.get(TRAINJOBS, "train", "-n", namespace)["spec"]["suspend"] is True
    assert not workload_has(kueue, namespace, wl["metadata"]["name"], "QuotaReserved")
    assert [
        (r["name"], r["replicas"] * r["template"]["spec"]["parallelism"])
        for r in jobset["spec"]["replicatedJobs"]
    ] == POD_SETS[runtime]
    assert owners(jobset, "f:spec", "f:replicatedJobs") == [("trainer", "Apply")]

    release(kueue, namespace, held_queue)
    wait_for(
        lambda: workload_has(kueue, namespace, wl["metadata"]["name"], "Admitted"),
        timeout=60,
        what="the TrainJob's Workload Admitted",
    )

    # Kueue's admission lands in its own runtime patch, one replicatedJob per PodSet,
    # written by Kueue with the unsuspend.
    tj = wait_for(
        lambda: unsuspended(kueue, namespace, "train"),
        timeout=30,
        what="TrainJob train unsuspended",
    )
    (patch,) = [p for p in tj["spec"]["runtimePatches"] if p["manager"] == KUEUE_PATCH_MANAGER]
    admitted = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert [r["name"] for r in admitted] == [name for name, _ in POD_SETS[runtime]]
    for r in admitted:
        pod = r["template"]["spec"]["template"]
        assert pod["spec"].get("nodeSelector") == ADMITTED_NODE_SELECTOR[r["name"]]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == r["name"]
    kueue_patch = "k:" + json.dumps({"manager": KUEUE_PATCH_MANAGER}, separators=(",", ":"))
    admitted_path = ("f:trainingRuntimeSpec", "f:template", "f:spec", "f:replicatedJobs")
    assert owners(tj, "f:spec", "f:runtimePatches", kueue_patch, *admitted_path) == [
        ("kueue", "Update")
    ]
    assert ("kueue", "Update") in owners(tj, "f:spec", "f:suspend")

    wait_for(
        lambda: has_condition(kubectl.get(JOBSETS, "train", "-n", namespace), "Completed"),
        timeout=90,
        what="JobSet train Completed",
    )
    wait_for(
        lambda: has_condition(kubectl.get(TRAINJOBS, "train", "-n", namespace), "Complete"),
        timeout=30,
        what="TrainJob train Complete",
    )
    assert len(kubectl.items(WORKLOADS, "-n", namespace)) == 1  # none for the JobSet

    # Every pod ran with what Kueue admitted for its PodSet (its labels, the flavor's
    # nodeSelector where it has one); the trainer nodes' pods carry the test's patch too.
    # Only the Trainer ever wrote the JobSet's spec, and the TrainJob's own metadata
    # stays on the TrainJob.
    jobset = kubectl.get(JOBSETS, "train", "-n", namespace, MANAGED_FIELDS)
    assert owners(jobset, "f:spec", "f:replicatedJobs") == [("trainer", "Apply")]
    pods = kubectl.items("pods", "-n", namespace, "-l", "jobset.sigs.k8s.io/jobset-name=train")
    roles = [p["metadata"]["labels"][REPLICATED_JOB_LABEL] for p in pods]
    assert sorted((r, roles.count(r)) for r in set(roles)) == sorted(POD_SETS[runtime])
    ours = {keys.QUEUE_NAME_LABEL, keys.POOL, keys.COUNT}
    for obj in (jobset, *pods):
        meta = obj["metadata"]
        assert not ours & {*meta.get("labels", {}), *meta.get("annotations", {})}
    for pod in pods:
        role = pod["metadata"]["labels"][REPLICATED_JOB_LABEL]
        assert pod["status"]["phase"] == "Succeeded"
        assert pod["spec"].get("nodeSelector") == ADMITTED_NODE_SELECTOR[role]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == role
        annotations = pod["metadata"]["annotations"]
        assert (role == tm.TRAINER_ROLE) == (KWOK_COMPLETION.items() <= annotations.items())

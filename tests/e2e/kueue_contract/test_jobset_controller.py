"""A JobSet on every supported Kueue, run by the stack's real JobSet controller: Kueue
makes one Workload owned by the JobSet with one PodSet per replicatedJob (count =
replicas × parallelism), and once Kueue admits it the controller creates the child Jobs,
unsuspended, whose pods run to completion on the kwok node. The queue here has no
admission check and its flavor no tolerations: only Kueue and JobSet are at work."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from atomic_gang_devstack import dev_objects
from atomic_gang_devstack import jobset_manifests as jm
from tests.e2e.kube import has_condition
from tests.e2e.system.harness import System
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

JOBSETS = "jobsets.jobset.x-k8s.io"
WORKLOADS = "workloads.kueue.x-k8s.io"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
ROLES = {"driver": (1, 1), "workers": (2, 2)}  # replicatedJob -> (replicas, parallelism)


@pytest.fixture
def plain_queue(kueue: System, namespace: str) -> Iterator[str]:
    """A LocalQueue in ``namespace`` on a ClusterQueue of its own, without our check."""
    name = f"plain-{namespace}"[:63]
    quota = {"cpu": "10", "memory": "10Gi"}
    flavor = {"apiVersion": dev_objects.KUEUE_API, "kind": "ResourceFlavor"}
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
    local_queue = {**dev_objects.local_queue(namespace, "plain"), "spec": {"clusterQueue": name}}
    kubectl = kueue.kubectl
    kubectl.apply({**flavor, "metadata": {"name": name}})
    kubectl.apply(cluster_queue)
    kubectl.apply(local_queue)
    wait_for(
        lambda: has_condition(kubectl.get("clusterqueue", name), "Active"),
        timeout=30,
        what=f"ClusterQueue {name} Active",
    )
    yield "plain"
    for kind in ("clusterqueue", "resourceflavor"):
        kubectl.run("delete", kind, name, "--wait=false", check=False)


def jobset(name: str, namespace: str, queue: str) -> dict[str, Any]:
    """A suspended JobSet with a queue name: a ``driver`` of one pod and two ``workers``
    Jobs of two pods each."""

    def replicated(role: str, replicas: int, parallelism: int) -> dict[str, Any]:
        pod = {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        }
        job = {"parallelism": parallelism, "completions": parallelism, "backoffLimit": 0}
        return {
            "name": role,
            "replicas": replicas,
            "template": {"spec": {**job, "template": {"spec": pod}}},
        }

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": queue},
        },
        "spec": {
            "suspend": True,
            "replicatedJobs": [replicated(r, *shape) for r, shape in ROLES.items()],
        },
    }


def test_the_stacks_jobset_controller_authenticates_as_its_service_account(
    kueue: System,
) -> None:
    kubeconfig = kueue.ctx.dir / "kubeconfigs" / "jobset.yaml"
    whoami = kueue.kubectl.run("auth", "whoami", f"--kubeconfig={kubeconfig}", "-o", "json")
    user = json.loads(whoami.stdout)["status"]["userInfo"]
    assert user["username"] == jm.USERNAME
    assert set(jm.GROUPS) <= set(user["groups"])


def test_kueue_admits_a_jobset_and_the_controller_runs_its_jobs(
    kueue: System, namespace: str, plain_queue: str
) -> None:
    kubectl = kueue.kubectl
    kubectl.apply(jobset("train", namespace, plain_queue))
    uid = kubectl.get(JOBSETS, "train", "-n", namespace)["metadata"]["uid"]

    def admitted() -> dict[str, Any] | None:
        wls = kubectl.items(WORKLOADS, "-n", namespace)
        return next((w for w in wls if has_condition(w, "Admitted")), None)

    wl = wait_for(admitted, timeout=60, what="the JobSet's Workload Admitted")

    assert len(kubectl.items(WORKLOADS, "-n", namespace)) == 1
    (owner,) = wl["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "JobSet",
        "train",
        uid,
        True,
    )
    pod_sets = [(p["name"], p["count"]) for p in wl["spec"]["podSets"]]
    assert pod_sets == [(role, replicas * par) for role, (replicas, par) in ROLES.items()]

    expected = {f"train-{role}-{i}" for role, (n, _) in ROLES.items() for i in range(n)}

    def children() -> list[dict[str, Any]] | None:
        jobs = kubectl.items("jobs", "-n", namespace, "-l", f"{JOBSET_NAME_LABEL}=train")
        running = [j for j in jobs if j["spec"].get("suspend") is False]
        return jobs if {j["metadata"]["name"] for j in running} == expected else None

    jobs = wait_for(children, timeout=60, what=f"child Jobs {sorted(expected)} unsuspended")

    for job in jobs:
        (ref,) = job["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"], ref["controller"]) == ("JobSet", uid, True)
        role = job["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
        assert job["spec"]["parallelism"] == ROLES[role][1]
    wait_for(
        lambda: has_condition(kubectl.get(JOBSETS, "train", "-n", namespace), "Completed"),
        timeout=90,
        what="JobSet train Completed",
    )

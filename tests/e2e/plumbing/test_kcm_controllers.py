"""The kube-controller-manager controllers the stack relies on really run.

ttl-after-finished deletes a finished Job (with foreground propagation, so the
garbage collector removes its pods while the Job still exists), and the
namespace controller empties a deleted namespace and lets it go.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from atomic_gang_devstack import dev_objects
from tests.e2e.jobs import plain_job
from tests.e2e.kube import Kube, has_condition, wait_for
from tests.e2e.plumbing.lookups import gone

pytestmark = pytest.mark.e2e

HOLD = "e2e.atomic-gang.k8s.aws/hold"  # our finalizer: keeps the deleted Job observable


def _pods(kube: Kube, namespace: str, job: str) -> list[dict[str, Any]]:
    return kube.items("pods", "-n", namespace, "-l", f"batch.kubernetes.io/job-name={job}")


def test_ttl_after_finished_deletes_the_job_and_gc_its_pods(
    kube: Kube, namespace: str, kwok_node: str
) -> None:
    job = plain_job("short-lived", namespace, node=kwok_node)
    job["spec"]["ttlSecondsAfterFinished"] = 0
    job["metadata"]["finalizers"] = [HOLD]
    kube.apply(job)
    pods = wait_for(lambda: _pods(kube, namespace, "short-lived"), timeout=60, what="its pod")

    deleting = wait_for(
        lambda: (
            (j := kube.get("job", "short-lived", "-n", namespace))
            and "deletionTimestamp" in j["metadata"]
            and j
        ),
        timeout=60,
        what="job short-lived deleted by ttl-after-finished",
    )
    assert has_condition(deleting, "Complete")  # the TTL counts from completion, not creation
    wait_for(
        lambda: not _pods(kube, namespace, "short-lived"),
        timeout=60,
        what="its pods garbage-collected while the Job is still held",
    )
    assert not gone(kube, "job", "short-lived", "-n", namespace)
    assert gone(kube, "pod", pods[0]["metadata"]["name"], "-n", namespace)

    kube.run(
        "patch",
        "job",
        "short-lived",
        "-n",
        namespace,
        "--type=json",
        "-p",
        '[{"op": "remove", "path": "/metadata/finalizers"}]',
    )
    wait_for(
        lambda: gone(kube, "job", "short-lived", "-n", namespace),
        timeout=30,
        what="job short-lived gone",
    )


def test_a_deleted_namespace_finishes_terminating(kube: Kube) -> None:
    name = f"e2e-doomed-{uuid.uuid4().hex[:6]}"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": name}}
    kube.apply(cm)
    kube.apply(dev_objects.local_queue(name))  # a custom resource: found through discovery
    wait_for(
        lambda: not gone(kube, "serviceaccount", "default", "-n", name),
        timeout=30,
        what=f"serviceaccount default in {name}",
    )

    kube.run("delete", "namespace", name, "--wait=false")

    wait_for(lambda: gone(kube, "namespace", name), timeout=90, what=f"namespace {name} gone")

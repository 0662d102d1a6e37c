"""Gang nodes belong to their gang (issue 13) and take its pods only once they can.

While a gang runs on its own nodes, a plain Pod that tolerates the gang taint and
selects that live pool is denied by the chart's ValidatingAdmissionPolicy (the dev
stack applies it as the chart renders it), and the gang's own pods, which the Job
controller creates from the template Kueue admitted, are still created and run,
one on each gang node. A gang's check turns Ready only once each Node holds the GPUs
one pod asks for, so no pod meets a Node whose device plugin has not registered yet.
"""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang.resources import EVENTS
from tests.e2e.names import gnp
from tests.e2e.system.conftest import unique
from tests.e2e.system.harness import System, sample_job
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
POLICY_DENIAL = "gang nodes belong to their gang"
GPU = "nvidia.com/gpu"


def _running_on(system: System, namespace: str, nodes: set[str]) -> list[dict[str, Any]] | None:
    pods = [p for p in system.pods(namespace) if p["status"].get("phase") == "Running"]
    placed = {p["spec"].get("nodeName") for p in pods}
    return pods if len(pods) == len(nodes) and placed == nodes else None


def _squatter(namespace: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "squatter", "namespace": namespace},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            "nodeSelector": {keys.POOL: pool},
            "tolerations": [
                {
                    "key": keys.GANG_TAINT,
                    "operator": "Equal",
                    "value": pool,
                    "effect": keys.GANG_TAINT_EFFECT,
                }
            ],
        },
    }


def test_a_plain_pod_cannot_squat_on_a_live_gang(system: System, namespace: str) -> None:
    label = unique("owned")
    pool = gnp(namespace, label)
    spec = sample_job("owned", namespace, pool=label, runs_for="20s", keep_warm_ttl="2s")
    job = system.world.submit(spec)
    nodes = wait_for(
        lambda: set(system.gang_nodes(pool)) if len(system.gang_nodes(pool)) == 4 else None,
        timeout=90,
        what="the gang's 4 nodes",
    )
    gang_pods = wait_for(
        lambda: _running_on(system, namespace, nodes), timeout=60, what="one gang pod per node"
    )
    # The Job controller made them from the template Kueue admitted with our podSetUpdates.
    for pod in gang_pods:
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "owned", True)
        assert pod["spec"]["nodeSelector"][keys.POOL] == pool

    done = system.kubectl.apply(_squatter(namespace, pool), check=False)

    assert done.returncode != 0
    assert "ValidatingAdmissionPolicy" in done.stderr
    assert POLICY_DENIAL in done.stderr
    assert system.kubectl.run("get", "pod", "squatter", "-n", namespace, check=False).returncode
    wait_for(lambda: system.complete(job), timeout=90, what="the gang Job complete")
    system.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")


def _ready_without_gpus(system: System, pool: str) -> str | None:
    """A gang Node that reports Ready while its allocatable has no GPU yet."""
    for name, node in system.gang_nodes(pool).items():
        status = node.get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        if ready and GPU not in (status.get("allocatable") or {}):
            return name
    return None


def test_the_gang_waits_for_its_nodes_gpus_before_its_pods_come(
    system: System, namespace: str
) -> None:
    """The device plugin advertises a Node's GPUs a while after it turns Ready; a pod
    asking for 8 created before then fails to schedule (Insufficient nvidia.com/gpu)."""
    system.sim.set_device_delay(8.0)
    try:
        label = unique("gpus")
        pool = gnp(namespace, label)
        job = system.world.submit(sample_job("gpus", namespace, pool=label, keep_warm_ttl="2s"))
        early = wait_for(
            lambda: _ready_without_gpus(system, pool), timeout=90, what="a Node Ready, no GPU yet"
        )
        joining = system.world.pool(pool)
        assert joining is not None
        assert joining.status.phase == "Joining", early
        assert system.job(job)["spec"]["suspend"] is True  # no pod yet
        satisfied = system.world.wait_pool(
            pool, lambda p: p.status.phase == "Satisfied", timeout=60, what="Satisfied"
        )
        assert satisfied.spec.claim is not None
        assert satisfied.spec.claim.resources == {GPU: 8}
        wait_for(lambda: system.complete(job), timeout=90, what="the gang Job complete")
    finally:
        system.sim.set_device_delay(0.0)
    events = system.kube.list(EVENTS, namespace=namespace).items
    assert [e["message"] for e in events if e.get("reason") == "FailedScheduling"] == []
    system.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")

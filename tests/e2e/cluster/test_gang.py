"""The sample Job with the in-cluster controller, and the
leader pod deleted mid-acquisition (the standby takes the Lease and finishes).

The controller pods reach the apiserver through their mounted ServiceAccount
token and the chart's RBAC only, and the simulated EC2 at the node IP with the
static credentials of ``auth.mode: static``.
"""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_devstack.components.simulated import nodesim_url
from atomic_gang_nodesim.control import NodeSimClient
from tests.e2e.cluster.conftest import CONTROLLER_SELECTOR, NAMESPACE, Cluster
from tests.e2e.names import gnp
from tests.e2e.system.conftest import unique
from tests.e2e.system.harness import CONTROLLER_KEY, sample_job
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e


def _complete(cluster: Cluster, namespace: str, name: str) -> bool:
    job = cluster.kube.get("job", name, "-n", namespace)
    return any(
        c["type"] == "Complete" and c["status"] == "True"
        for c in job.get("status", {}).get("conditions") or []
    )


def _since(obj: dict[str, Any], kind: str) -> str:
    """lastTransitionTime of condition ``kind`` when True ('' otherwise); RFC 3339 sorts."""
    conds = obj.get("status", {}).get("conditions") or []
    return next(
        (c["lastTransitionTime"] for c in conds if c["type"] == kind and c["status"] == "True"), ""
    )


def _launches(cluster: Cluster, pool: str) -> list[dict[str, Any]]:
    calls = cluster.world.fake.calls("RunInstances")
    return [c for c in calls if c["caller"] == CONTROLLER_KEY and pool in str(c["params"])]


def _live(cluster: Cluster, pool: str) -> list[str]:
    return cluster.world.live(pool)


def test_sample_job_runs_end_to_end_with_the_in_cluster_controller(
    cluster: Cluster, namespace: str
) -> None:
    label = unique("incluster")
    pool = gnp(namespace, label)
    spec = sample_job("allreduce-pretrain", namespace, pool=label, keep_warm_ttl="3s")
    job = cluster.world.submit(spec)

    def admitted() -> dict[str, Any] | None:
        wl = cluster.world.workload(job)
        conds = (wl or {}).get("status", {}).get("conditions") or []
        return wl if any(c["type"] == "Admitted" and c["status"] == "True" for c in conds) else None

    wl = wait_for(admitted, timeout=120, what="the Workload admitted")
    nodes = cluster.kube.items("nodes", "-l", f"atomic-gang.k8s.aws/pool={pool}")
    ready_at = [_since(n, "Ready") for n in nodes if _since(n, "Ready")]
    assert len(ready_at) == 4
    # Kueue admitted it only once all 4 gang nodes were Ready (kwok and Kueue stamp these).
    assert max(ready_at) <= _since(wl, "Admitted")
    wait_for(
        lambda: _complete(cluster, namespace, "allreduce-pretrain"),
        timeout=120,
        what="the Job complete",
    )
    placed = sorted(p["spec"]["nodeName"] for p in cluster.kube.items("pods", "-n", namespace))
    assert placed == sorted(n["metadata"]["name"] for n in nodes)  # one pod per gang node
    launches = _launches(cluster, pool)
    assert [(c["params"]["MinCount"], c["params"]["MaxCount"]) for c in launches] == [("4", "4")]
    wait_for(lambda: not _live(cluster, pool), timeout=90, what="the gang's instances released")


def test_leader_pod_deleted_mid_acquisition_standby_finishes(
    cluster: Cluster, namespace: str
) -> None:
    leader = wait_for(cluster.leader, timeout=60, what="a leader")
    sim = NodeSimClient(nodesim_url(cluster.ctx))
    sim.set_boot_delay(8.0)  # the deletion lands while the set is joining
    try:
        label = unique("failover")
        pool = gnp(namespace, label)
        cluster.world.submit(sample_job("failover", namespace, pool=label, keep_warm_ttl="2s"))
        cluster.world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
        cluster.kube.run("delete", "pod", leader, "-n", NAMESPACE, "--wait=false")
        standby = wait_for(
            lambda: (new := cluster.leader()) and new != leader and new,
            timeout=60,
            what="the standby holding the Lease",
        )
        assert standby in {p["metadata"]["name"] for p in cluster.pods(CONTROLLER_SELECTOR)}
        wait_for(
            lambda: _complete(cluster, namespace, "failover"), timeout=120, what="the Job complete"
        )
    finally:
        sim.set_boot_delay(1.0)
        sim.close()
    ok = [c for c in _launches(cluster, pool) if c["outcome"] == "ok"]
    assert len(ok) == 1  # exactly one RunInstances for the gang
    wait_for(lambda: not _live(cluster, pool), timeout=90, what="the gang's instances released")

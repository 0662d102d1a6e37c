"""The idle-cost bench's incremental baseline against in-process moto + our layer and the
node-join simulator: the nodes it launches join, and its pods fit them as the scheduler
decides (every NoSchedule/NoExecute taint tolerated, every selected label carried, the
GPUs there), while its Jobs reach for no gang node (so the webhook admits them).

Before the fix the baseline launched without an instance profile: the simulator, like
EKS, refused the registration (kubelet has no credentials), no node ever joined and the
bench's baseline phase finished 0 of 48 jobs."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from atomic_gang import keys
from atomic_gang.template import claims
from atomic_gang_fakeaws.world import World
from atomic_gang_nodesim.control import Controls
from atomic_gang_nodesim.knobs import BootDelay
from atomic_gang_provisioner.kube.objects import Listing
from bench.incremental_baseline import (
    BASELINE_TAINT,
    NODE_LABEL,
    IncrementalBaseline,
    baseline_job,
    cluster_join,
)
from tests.integration.nodesim.conftest import CLUSTER, FakeKube, client, simulator
from tests.support.clock import ManualClock

NS, JOB = "idle-baseline", "j00-n2"


class JobsAndPods:
    """The two lists the baseline reads: one Job and its pods, none scheduled yet."""

    def __init__(self, job: dict[str, Any]) -> None:
        stamp = {"creationTimestamp": "2026-12-01T00:00:00Z"}
        self.job = {**job, "metadata": {**job["metadata"], **stamp}}
        spec = job["spec"]["template"]["spec"]
        label = {"batch.kubernetes.io/job-name": job["metadata"]["name"]}
        self.pods = [
            {"metadata": {"name": f"p{i}", "labels": label}, "spec": copy.deepcopy(spec)}
            for i in range(int(job["spec"]["parallelism"]))
        ]

    def list(self, res: Any, **_: Any) -> Listing:
        items = [self.job] if res.plural == "jobs" else self.pods
        return Listing(items=copy.deepcopy(items), resource_version="1")


def _tolerated(taint: Mapping[str, str], tolerations: list[dict[str, str]]) -> bool:
    """The scheduler's TaintToleration rule for one taint."""
    for t in tolerations:
        if t.get("effect", "") not in ("", taint["effect"]):
            continue
        if t.get("operator", "Equal") == "Exists" and t.get("key", "") in ("", taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def unschedulable(pod: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    """Why the scheduler would keep ``pod`` off ``node`` (empty: it fits)."""
    why = [
        f"taint {t['key']}={t.get('value', '')}:{t['effect']} not tolerated"
        for t in node["spec"].get("taints", [])
        if t["effect"] in ("NoSchedule", "NoExecute")
        and not _tolerated(t, pod.get("tolerations", []))
    ]
    labels = node["metadata"]["labels"]
    why += [
        f"node lacks label {k}={v}"
        for k, v in pod.get("nodeSelector", {}).items()
        if labels.get(k) != v
    ]
    for c in pod["containers"]:
        for name, want in c["resources"]["limits"].items():
            if int(node["status"]["allocatable"].get(name, "0")) < int(want):
                why.append(f"node has too little {name}")
    return why


def _baseline(world: World, kube: JobsAndPods) -> IncrementalBaseline:
    return IncrementalBaseline(
        ec2=client("ec2", "baseline"),
        kube=kube,  # type: ignore[arg-type]  # the two list calls the baseline makes
        namespace=NS,
        subnet=world.subnets["us-east-1a"],
        join=cluster_join(client("eks", "baseline"), CLUSTER),
        cluster=CLUSTER,
        instance_profile=world.instance_profile,
    )


def test_the_baselines_nodes_join_and_its_pods_fit_them(world: World) -> None:
    job = baseline_job(JOB, NS, count=2)
    pod = job["spec"]["template"]["spec"]
    baseline = _baseline(world, JobsAndPods(job))
    baseline.tick()
    assert baseline.launches == {"ok": 2}
    nodes = FakeKube()
    sim = simulator(nodes, ManualClock(start=100.0), boot=BootDelay(seconds=0))
    sim.tick()
    reasons = [t["reason"] for t in Controls(sim).snapshot()["instances"].values()]
    assert len(nodes.nodes) == 2, reasons
    for node in nodes.nodes.values():
        assert node["spec"]["taints"] == [
            {"key": BASELINE_TAINT, "value": JOB, "effect": "NoExecute"}
        ]
        assert unschedulable(pod, node) == []
    assert claims(pod) == []  # the webhook and the gang node policy let it through


def test_the_fit_check_sees_the_gang_taint_and_a_missing_label() -> None:
    """The check above can fail: a node with our gang taint, or another Job's label."""
    pod = baseline_job(JOB, NS, count=2)["spec"]["template"]["spec"]
    node = {
        "metadata": {"labels": {NODE_LABEL: "other"}},
        "spec": {"taints": [{"key": keys.GANG_TAINT, "value": JOB, "effect": "NoSchedule"}]},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }
    assert unschedulable(pod, node) == [
        f"taint {keys.GANG_TAINT}={JOB}:NoSchedule not tolerated",
        f"node lacks label {NODE_LABEL}={JOB}",
    ]

"""TrainJob gangs on every supported Kueue, run by the stack's real Kubeflow Trainer and
JobSet controllers: a TrainJob on the torch runtime with numNodes 4 gets its 4 trainer
nodes in one launch, is admitted only at 4/4, runs one trainer pod per gang node,
completes and is released; a count that differs from numNodes is denied by the webhook
and, with the webhook off, our check rejects it with nothing launched; a runtime's
initializer stays off the gang nodes; a TrainJob on a runtime whose JobSet restarts
loses a node, which is replaced in place, and completes without a new admission."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import yaml

from atomic_gang import keys
from atomic_gang.resources import Resource
from atomic_gang_devstack import trainer_manifests as tm
from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_provisioner.kube import NotFoundError
from tests.e2e.kueue_contract.conftest import unique
from tests.e2e.kueue_contract.harness import WorkloadLog, webhook_off, workload_of
from tests.e2e.names import gnp
from tests.e2e.system.harness import System, assert_pool_released, condition
from tests.support.resources import EVENTS, JOBSETS, PODS, TRAINJOBS
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

SAMPLE_JOB = REPO_ROOT / "hack" / "demo" / "allreduce-pretrain.yaml"
PATCH_MANAGER = "atomic-gang.k8s.aws/e2e"  # the test's own runtime patch (domain-prefixed)
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
ROLE = "jobset.sigs.k8s.io/replicatedjob-name"


def gang_trainjob(
    name: str,
    namespace: str,
    *,
    pool: str,
    runtime: str = tm.TORCH_RUNTIME,
    num_nodes: int = 4,
    count: int = 4,
    runs_for: str = "3s",
) -> dict[str, Any]:
    """A TrainJob on ``runtime`` with the sample Job's gang keys (pool label ``pool``,
    count, a 3 s keep-warm), trainer nodes asking for 8 GPUs each, and a runtime patch of the
    test's own that makes kwok complete every pod ``runs_for`` after it runs."""
    sample = yaml.safe_load(SAMPLE_JOB.read_text())["metadata"]
    annotations = {**sample["annotations"], keys.COUNT: str(count), keys.KEEP_WARM_TTL: "3s"}
    labels = {**sample["labels"], keys.POOL: pool}
    kwok = {
        "pod-complete.stage.kwok.x-k8s.io/delay": runs_for,
        "pod-complete.stage.kwok.x-k8s.io/jitter-delay": runs_for,
    }
    roles = [tm.TRAINER_ROLE] + ([tm.INITIALIZER_ROLE] if runtime != tm.TORCH_RUNTIME else [])
    patched = [
        {"name": r, "template": {"spec": {"template": {"metadata": {"annotations": kwok}}}}}
        for r in roles
    ]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "runtimeRef": {"name": runtime},
            "trainer": {
                "numNodes": num_nodes,
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}},
            },
            "runtimePatches": [
                {
                    "manager": PATCH_MANAGER,
                    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": patched}}},
                }
            ],
        },
    }


def submit(system: System, tj: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = system.kube.create(TRAINJOBS, tj)
    return created


def get(system: System, tj: dict[str, Any]) -> dict[str, Any]:
    m = tj["metadata"]
    found: dict[str, Any] = system.kube.get(TRAINJOBS, m["name"], namespace=m["namespace"])
    return found


def picture(system: System, tj: dict[str, Any]) -> str:
    """The TrainJob's and its JobSet's status, its pods and the namespace's Events."""
    m = tj["metadata"]
    ns = m["namespace"]
    lines = [f"trainjob status: {get(system, tj).get('status')}"]
    try:
        js = system.kube.get(JOBSETS, m["name"], namespace=ns)
        lines.append(f"jobset status: {js.get('status')}")
    except NotFoundError:
        lines.append("no jobset")
    for p in system.kube.list(PODS, namespace=ns).items:
        lines.append(
            f"pod {p['metadata']['name']}: {p['status'].get('phase')} on "
            f"{p['spec'].get('nodeName')}"
        )
    for e in system.kube.list(EVENTS, namespace=ns).items:
        lines.append(f"event {e['involvedObject'].get('name')}: {e['reason']}: {e.get('message')}")
    return "\n".join(lines)


def wait_complete(system: System, tj: dict[str, Any], timeout: float = 150) -> None:
    try:
        wait_for(
            lambda: condition(get(system, tj), "Complete") is not None,
            timeout=timeout,
            what="the TrainJob Complete",
        )
    except TimeoutError:
        raise AssertionError(f"TrainJob not Complete:\n{picture(system, tj)}") from None


def nodes_by_role(system: System, tj: dict[str, Any]) -> dict[str, list[str]]:
    m = tj["metadata"]
    items = system.kube.list(
        PODS, namespace=m["namespace"], label_selector=f"{JOBSET_NAME}={m['name']}"
    ).items
    out: dict[str, list[str]] = {}
    for p in items:
        if p["spec"].get("nodeName"):
            out.setdefault(p["metadata"]["labels"][ROLE], []).append(p["spec"]["nodeName"])
    return out


def launches(system: System, pool: str) -> list[tuple[str, str]]:
    ok = [c for c in system.controller_calls("RunInstances", pool) if c["outcome"] == "ok"]
    return [(c["params"]["MinCount"], c["params"]["MaxCount"]) for c in ok]


def _at(cond: dict[str, Any] | None) -> datetime:
    assert cond is not None
    return datetime.fromisoformat(str(cond["lastTransitionTime"]).replace("Z", "+00:00"))


def admitted(system: System, tj: dict[str, Any]) -> dict[str, Any]:
    ns, uid = tj["metadata"]["namespace"], tj["metadata"]["uid"]

    def probe() -> dict[str, Any] | None:
        wl = workload_of(system, ns, uid)
        return wl if condition(wl, "Admitted") else None

    try:
        return wait_for(probe, timeout=120, what="the TrainJob's Workload admitted")
    except TimeoutError:
        raise AssertionError(f"not admitted:\n{picture(system, tj)}") from None


def test_a_trainjob_gets_its_trainer_nodes_atomically_and_one_pod_on_each(
    kueue: System, namespace: str
) -> None:
    label = unique("kc-tj")
    pool = gnp(namespace, label)
    tj = submit(kueue, gang_trainjob("llama", namespace, pool=label))
    wl = admitted(kueue, tj)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("node", 4)]
    nodes = kueue.gang_nodes(pool)
    ready = [_at(condition(n, "Ready")) for n in nodes.values() if condition(n, "Ready")]
    assert len(ready) == 4
    assert max(ready) <= _at(condition(wl, "Admitted"))  # admitted only at 4/4
    check = kueue.world.check(tj)
    assert [u["name"] for u in check["podSetUpdates"]] == ["node"]
    assert "TrainJob/llama" in kueue.kubectl.run("get", "gnp", pool, "-o", "wide").stdout

    wait_complete(kueue, tj)
    placed = nodes_by_role(kueue, tj)
    assert sorted(placed["node"]) == sorted(nodes)  # one trainer pod on each gang node
    assert launches(kueue, pool) == [("4", "4")]  # one RunInstances for all 4
    kueue.world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm")
    kueue.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")
    assert kueue.world.live(pool) == []
    assert_pool_released(kueue, pool)


def test_a_count_that_differs_from_num_nodes_is_denied_and_without_the_webhook_rejected(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    label = unique("kc-tj-count")
    pool = gnp(namespace, label)
    bad = gang_trainjob("miscounted", namespace, pool=label, count=3)
    done = kueue.kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(bad), check=False)
    assert done.returncode != 0
    assert "CountMismatch" in done.stderr
    assert "numNodes" in done.stderr
    with pytest.raises(NotFoundError):
        get(kueue, bad)

    with webhook_off(kueue):
        tj = submit(kueue, bad)
    uid = tj["metadata"]["uid"]
    wl = wait_for(lambda: workload_of(kueue, namespace, uid), timeout=30, what="its Workload")
    name = wl["metadata"]["name"]
    rejected = wait_for(
        lambda: next((v for v in log.of(name) if v.state == "Rejected"), None),
        timeout=45,
        what="our check Rejected",
    )
    assert "Invalid gang TrainJob" in rejected.message
    assert "CountMismatch" in rejected.message
    assert kueue.world.pool(pool) is None
    assert kueue.controller_calls("RunInstances", pool) == []  # zero launch calls


def test_an_initializer_stays_off_the_gang_nodes(kueue: System, namespace: str) -> None:
    label = unique("kc-tj-init")
    pool = gnp(namespace, label)
    tj = submit(
        kueue,
        gang_trainjob(
            "with-init", namespace, pool=label, runtime=tm.TORCH_WITH_INITIALIZER_RUNTIME
        ),
    )
    wl = admitted(kueue, tj)
    counts = {p["name"]: p["count"] for p in wl["spec"]["podSets"]}
    assert counts == {tm.INITIALIZER_ROLE: 1, "node": 4}
    assert [u["name"] for u in kueue.world.check(tj)["podSetUpdates"]] == ["node"]
    wait_complete(kueue, tj)
    nodes = set(kueue.gang_nodes(pool))
    placed = nodes_by_role(kueue, tj)
    assert sorted(placed["node"]) == sorted(nodes)
    (initializer_node,) = placed[tm.INITIALIZER_ROLE]
    assert initializer_node not in nodes  # an ordinary node
    assert launches(kueue, pool) == [("4", "4")]
    assert_pool_released(kueue, pool)


CLUSTER_RUNTIMES = Resource(
    TRAINJOBS.group,
    TRAINJOBS.version,
    "clustertrainingruntimes",
    namespaced=False,
    kind="ClusterTrainingRuntime",
)


def restarting_runtime(system: System) -> str:
    """The torch runtime as shipped, plus a JobSet failurePolicy that restarts it: how a
    platform team lets its TrainJobs survive a lost node (the shipped one fails them)."""
    name = f"torch-restarting-{unique('rt')}"
    shipped = system.kube.get(CLUSTER_RUNTIMES, tm.TORCH_RUNTIME)
    spec = dict(shipped["spec"])
    template = dict(spec["template"])
    template["spec"] = {**template["spec"], "failurePolicy": {"maxRestarts": 2}}
    spec["template"] = template
    system.kube.create(
        CLUSTER_RUNTIMES,
        {
            "apiVersion": shipped["apiVersion"],
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": name, "labels": shipped["metadata"].get("labels") or {}},
            "spec": spec,
        },
    )
    return name


def test_a_trainjob_that_loses_a_node_is_repaired_in_place_and_completes(
    kueue: System, namespace: str
) -> None:
    label = unique("kc-tj-lost")
    pool = gnp(namespace, label)
    runtime = restarting_runtime(kueue)
    try:
        spec = gang_trainjob("lost", namespace, pool=label, runtime=runtime, runs_for="25s")
        (patch,) = spec["spec"]["runtimePatches"]
        jobs = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        jobs[:] = [j for j in jobs if j["name"] == tm.TRAINER_ROLE]  # torch's roles only
        tj = submit(kueue, spec)
        wl = admitted(kueue, tj)
        first = kueue.world.pool(pool)
        assert first is not None
        victim, *kept = first.status.instanceIds
        kueue.sim.terminate(victim)  # behind the provisioner's back
        whole = kueue.world.wait_pool(
            pool,
            lambda p: p.status.phase == "Satisfied" and p.status.repairs == 1,
            timeout=120,
            what="the gang repaired",
        )
        wait_complete(kueue, tj, timeout=180)
        assert whole.status.activeGroup == first.status.activeGroup
        assert set(kept) <= set(whole.status.instanceIds)
        assert launches(kueue, pool) == [("4", "4"), ("1", "1")]
        again = workload_of(kueue, namespace, tj["metadata"]["uid"])
        assert again is not None
        assert again["metadata"]["uid"] == wl["metadata"]["uid"]
        assert not ((again.get("status") or {}).get("schedulingStats") or {}).get("evictions")
        assert_pool_released(kueue, pool)
    finally:
        kueue.kube.delete(CLUSTER_RUNTIMES, runtime)

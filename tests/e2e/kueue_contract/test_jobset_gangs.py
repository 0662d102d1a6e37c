"""JobSet gangs on every supported Kueue, run by the stack's real JobSet controller:
the gang roles get their N nodes in one launch and the Workload is admitted only at N/N,
the driver stays off the gang; without gang-roles every pod is the gang; a count that
differs from the gang's pods is denied by the webhook and, with the webhook off, our
check rejects it with nothing launched; a shortfall holds nothing, turns into Retry
and is admitted once capacity returns; a lost node of a running JobSet is replaced in
place (one launch of 1, the rest kept) and the JobSet, restarted by its failurePolicy,
completes without a new admission."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import yaml

from atomic_gang import keys
from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_provisioner.kube import NotFoundError
from tests.e2e.kueue_contract.conftest import unique
from tests.e2e.kueue_contract.harness import WorkloadLog, webhook_off, workload_of
from tests.e2e.names import gnp
from tests.e2e.system.harness import (
    System,
    assert_pool_released,
    condition,
)
from tests.support.resources import EVENTS, JOBS, JOBSETS, PODS
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

SAMPLE_JOBSET = REPO_ROOT / "hack" / "demo" / "allreduce-jobset.yaml"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
ROLE = "jobset.sigs.k8s.io/replicatedjob-name"


def gang_jobset(
    name: str,
    namespace: str,
    *,
    pool: str,
    count: int = 4,
    gang_roles: str | None = "workers",
    runs_for: str = "3s",
    spread_all: bool = False,
    **ann: str,
) -> dict[str, Any]:
    """The sample JobSet (``hack/demo``): a ``driver`` of one CPU pod and ``workers`` of
    2 × 2 GPU pods, renamed, with pool label ``pool``, annotations overridden and pods that
    run ``runs_for`` on kwok. ``spread_all``: one pod per node over every role, not only
    the workers."""
    js: dict[str, Any] = yaml.safe_load(SAMPLE_JOBSET.read_text())
    meta = js["metadata"]
    meta.update(name=name, namespace=namespace)
    meta["labels"][keys.POOL] = pool
    meta["annotations"][keys.COUNT] = str(count)
    meta["annotations"][keys.KEEP_WARM_TTL] = "3s"
    if gang_roles is None:
        del meta["annotations"][keys.GANG_ROLES]
    else:
        meta["annotations"][keys.GANG_ROLES] = gang_roles
    meta["annotations"].update({keys.PREFIX + k.replace("_", "-"): v for k, v in ann.items()})
    for rj in js["spec"]["replicatedJobs"]:
        template = rj["template"]["spec"]["template"]
        template["metadata"]["annotations"] = {
            "pod-complete.stage.kwok.x-k8s.io/delay": runs_for,
            "pod-complete.stage.kwok.x-k8s.io/jitter-delay": runs_for,
        }
        spec = template["spec"]
        spec["terminationGracePeriodSeconds"] = 0
        if rj["name"] == "workers" or spread_all:
            match = {JOBSET_NAME: name} if spread_all else {JOBSET_NAME: name, ROLE: "workers"}
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": match},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
    return js


def submit(system: System, js: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = system.kube.create(JOBSETS, js)
    return created


def get(system: System, js: dict[str, Any]) -> dict[str, Any]:
    m = js["metadata"]
    found: dict[str, Any] = system.kube.get(JOBSETS, m["name"], namespace=m["namespace"])
    return found


def completed(system: System, js: dict[str, Any]) -> bool:
    return condition(get(system, js), "Completed") is not None


def wait_completed(system: System, js: dict[str, Any], timeout: float = 120) -> None:
    """The JobSet Completed; else fail with what its Jobs, pods and Events show."""
    try:
        wait_for(lambda: completed(system, js), timeout=timeout, what="the JobSet Completed")
    except TimeoutError:
        raise AssertionError(f"JobSet not Completed:\n{picture(system, js)}") from None


def picture(system: System, js: dict[str, Any]) -> str:
    """The JobSet's status, its Jobs, its pods and the namespace's Events, one per line."""
    m = js["metadata"]
    ns, selector = m["namespace"], f"{JOBSET_NAME}={m['name']}"
    lines = [f"jobset status: {get(system, js).get('status')}"]
    for j in system.kube.list(JOBS, namespace=ns, label_selector=selector).items:
        spec = j["spec"]
        lines.append(
            f"job {j['metadata']['name']}: suspend={spec.get('suspend')} "
            f"selector={spec['template']['spec'].get('nodeSelector')} "
            f"status={j.get('status')}"
        )
    for p in system.kube.list(PODS, namespace=ns, label_selector=selector).items:
        lines.append(
            f"pod {p['metadata']['name']}: {p['status'].get('phase')} on "
            f"{p['spec'].get('nodeName')} {p['status'].get('conditions')}"
        )
    for e in system.kube.list(EVENTS, namespace=ns).items:
        lines.append(f"event {e['involvedObject'].get('name')}: {e['reason']}: {e.get('message')}")
    return "\n".join(lines)


def pods_by_role(system: System, js: dict[str, Any]) -> dict[str, list[str]]:
    """replicatedJob -> the nodes its pods ran on (one entry per scheduled pod)."""
    m = js["metadata"]
    items = system.kube.list(
        PODS, namespace=m["namespace"], label_selector=f"{JOBSET_NAME}={m['name']}"
    ).items
    out: dict[str, list[str]] = {}
    for p in items:
        node = p["spec"].get("nodeName")
        if node:
            out.setdefault(p["metadata"]["labels"][ROLE], []).append(node)
    return out


def _at(cond: dict[str, Any] | None) -> datetime:
    assert cond is not None
    return datetime.fromisoformat(str(cond["lastTransitionTime"]).replace("Z", "+00:00"))


def admitted_workload(system: System, js: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
    ns, uid = js["metadata"]["namespace"], js["metadata"]["uid"]

    def probe() -> dict[str, Any] | None:
        wl = workload_of(system, ns, uid)
        return wl if condition(wl, "Admitted") else None

    return wait_for(probe, timeout=timeout, what="the JobSet's Workload admitted")


def launches(system: System, pool: str) -> list[tuple[str, str]]:
    calls = system.controller_calls("RunInstances", pool)
    return [
        (c["params"]["MinCount"], c["params"]["MaxCount"]) for c in calls if c["outcome"] == "ok"
    ]


def test_the_workers_get_their_nodes_atomically_and_the_driver_stays_off_them(
    kueue: System, namespace: str
) -> None:
    label = unique("kc-js")
    pool = gnp(namespace, label)
    js = submit(kueue, gang_jobset("allreduce", namespace, pool=label))
    wl = admitted_workload(kueue, js)
    nodes = kueue.gang_nodes(pool)
    ready = [_at(condition(n, "Ready")) for n in nodes.values() if condition(n, "Ready")]
    assert len(ready) == 4
    assert max(ready) <= _at(condition(wl, "Admitted"))  # admitted only at 4/4
    check = kueue.world.check(js)
    group = kueue.world.pool(pool).status.activeGroup  # type: ignore[union-attr]
    assert [u["name"] for u in check["podSetUpdates"]] == ["workers"]
    assert check["podSetUpdates"][0]["nodeSelector"] == {keys.POOL: pool, keys.GROUP: group}
    assert "JobSet/allreduce" in kueue.kubectl.run("get", "gnp", pool, "-o", "wide").stdout

    wait_completed(kueue, js)
    placed = pods_by_role(kueue, js)
    assert sorted(placed["workers"]) == sorted(nodes)  # one worker pod on each gang node
    (driver_node,) = placed["driver"]
    assert driver_node not in nodes  # the driver ran on an ordinary node
    assert launches(kueue, pool) == [("4", "4")]  # one RunInstances for all 4

    kueue.world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm")
    kueue.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")
    assert kueue.world.live(pool) == []
    assert_pool_released(kueue, pool)


def test_without_gang_roles_every_pod_gets_a_gang_node(kueue: System, namespace: str) -> None:
    label = unique("kc-js-all")
    pool = gnp(namespace, label)
    js = submit(
        kueue,
        gang_jobset("all-roles", namespace, pool=label, count=5, gang_roles=None, spread_all=True),
    )
    admitted_workload(kueue, js)
    check = kueue.world.check(js)
    assert sorted(u["name"] for u in check["podSetUpdates"]) == ["driver", "workers"]
    wait_completed(kueue, js)
    nodes = set(kueue.gang_nodes(pool))
    placed = [n for on in pods_by_role(kueue, js).values() for n in on]
    assert len(placed) == 5
    assert set(placed) == nodes  # 5 pods on 5 distinct gang nodes
    assert launches(kueue, pool) == [("5", "5")]
    assert_pool_released(kueue, pool)


def test_a_count_that_differs_from_the_gang_is_denied_and_without_the_webhook_rejected(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    label = unique("kc-js-count")
    pool = gnp(namespace, label)
    bad = gang_jobset("miscounted", namespace, pool=label, count=3)
    done = kueue.kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(bad), check=False)
    assert done.returncode != 0
    assert "CountMismatch" in done.stderr
    assert "workers: 2 replicas × 2 = 4 pods" in done.stderr
    with pytest.raises(NotFoundError):
        get(kueue, bad)

    with webhook_off(kueue):
        js = submit(kueue, bad)
    uid = js["metadata"]["uid"]
    wl = wait_for(lambda: workload_of(kueue, namespace, uid), timeout=30, what="its Workload")
    name = wl["metadata"]["name"]
    rejected = wait_for(
        lambda: next((v for v in log.of(name) if v.state == "Rejected"), None),
        timeout=45,
        what="our check Rejected",
    )
    assert "Invalid gang JobSet" in rejected.message
    assert "CountMismatch" in rejected.message
    assert "workers: 2 replicas × 2 = 4 pods" in rejected.message
    assert kueue.world.pool(pool) is None
    assert kueue.controller_calls("RunInstances", pool) == []  # zero launch calls


def test_a_shortfall_holds_nothing_turns_into_retry_and_is_admitted_when_capacity_returns(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    label = unique("kc-js-short")
    pool = gnp(namespace, label)
    zone = "us-east-1c"
    kueue.fake.set_capacity(zone, "p4d.24xlarge", 3)  # a 4-gang does not fit
    try:
        js = submit(kueue, gang_jobset("short", namespace, pool=label, availability_zones=zone))
        uid = js["metadata"]["uid"]
        wl = wait_for(lambda: workload_of(kueue, namespace, uid), timeout=30, what="Workload")
        name = wl["metadata"]["name"]
        retry = wait_for(
            lambda: next((v for v in log.of(name) if v.state == "Retry"), None),
            timeout=60,
            what="our check Retry after 2 failed attempts",
        )
        assert "2 consecutive failed attempts" in retry.message
        assert kueue.ever_launched(pool) == []  # pending at $0: not one instance
        assert pods_by_role(kueue, js) == {}
        kueue.fake.set_capacity(zone, "p4d.24xlarge", 4)
        ready = kueue.world.wait_check(js, "Ready", timeout=120)
        assert ready["message"].endswith("(attempt 2 after 1 eviction)"), ready["message"]
        wait_completed(kueue, js)
        assert launches(kueue, pool) == [("4", "4")]
    finally:
        kueue.fake.set_capacity(zone, "p4d.24xlarge", None)
    assert_pool_released(kueue, pool)


def test_a_lost_gang_node_is_replaced_in_place_and_the_restarted_jobset_completes(
    kueue: System, namespace: str
) -> None:
    label = unique("kc-js-lost")
    pool = gnp(namespace, label)
    spec = gang_jobset("lost", namespace, pool=label, runs_for="25s")
    spec["spec"]["failurePolicy"] = {"maxRestarts": 2}  # the JobSet restarts its own pods
    js = submit(kueue, spec)
    wl = admitted_workload(kueue, js)

    def workers_running() -> bool:
        m = js["metadata"]
        pods = kueue.kube.list(
            PODS,
            namespace=m["namespace"],
            label_selector=f"{JOBSET_NAME}={m['name']},{ROLE}=workers",
        ).items
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        return len(running) == 4

    wait_for(workers_running, timeout=90, what="4 worker pods running")
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
    wait_completed(kueue, js, timeout=150)
    assert whole.status.activeGroup == first.status.activeGroup  # the JobSet's pin holds
    assert set(kept) <= set(whole.status.instanceIds)  # the healthy three untouched
    assert victim not in kueue.world.live(pool)
    assert launches(kueue, pool) == [("4", "4"), ("1", "1")]  # one launch of 1, no new gang
    again = workload_of(kueue, namespace, js["metadata"]["uid"])
    assert again is not None
    assert again["metadata"]["uid"] == wl["metadata"]["uid"]
    stats = (again.get("status") or {}).get("schedulingStats") or {}
    assert not stats.get("evictions")  # admitted once, never evicted
    assert_pool_released(kueue, pool)


def test_a_worker_that_fails_once_restarts_on_the_same_nodes_with_no_ec2_call(
    kueue: System, namespace: str
) -> None:
    """A pod failure is not a node failure: a worker exits 1 on a healthy node, the
    JobSet's failurePolicy restarts it, and its new pods land on the same gang nodes;
    no launch, no termination, no repair."""
    label = unique("kc-js-podfail")
    pool = gnp(namespace, label)
    spec = gang_jobset("podfail", namespace, pool=label, runs_for="15s")
    spec["spec"]["failurePolicy"] = {"maxRestarts": 2}
    js = submit(kueue, spec)
    admitted_workload(kueue, js)
    m = js["metadata"]
    selector = f"{JOBSET_NAME}={m['name']},{ROLE}=workers"

    def running_workers() -> list[dict[str, Any]] | None:
        pods = kueue.kube.list(PODS, namespace=namespace, label_selector=selector).items
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        return running if len(running) == 4 else None

    (victim, *_) = wait_for(running_workers, timeout=90, what="4 worker pods running")
    before = kueue.world.pool(pool)
    assert before is not None
    status = dict(victim["status"])
    status["phase"] = "Failed"  # as the kubelet reports a container that exited 1
    status["containerStatuses"] = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 1, "reason": "Error"}},
        }
        for c in victim["spec"]["containers"]
    ]
    kueue.kube.replace_status(PODS, {**victim, "status": status})
    wait_for(
        lambda: (get(kueue, js).get("status") or {}).get("restarts", 0) >= 1,
        timeout=60,
        what="the JobSet restarted by its failurePolicy",
    )
    wait_completed(kueue, js, timeout=150)
    # Read at once: the set is released only after the 3 s keep-warm that follows.
    terminated = [
        c
        for c in kueue.controller_calls("TerminateInstances")
        if set(before.status.instanceIds) & set(map(str, c["params"].values()))
    ]
    after = kueue.world.pool(pool)
    assert after is not None
    assert terminated == []  # no node of the gang was touched
    assert after.status.instanceIds == before.status.instanceIds  # the same four nodes
    assert after.status.activeGroup == before.status.activeGroup
    assert after.status.repairs == 0
    assert launches(kueue, pool) == [("4", "4")]  # no launch for a pod's failure
    assert_pool_released(kueue, pool)

"""The manager's event handlers: which reconcile keys an informer event turns into."""

from __future__ import annotations

from typing import Any

from atomic_gang.resources import JOBSETS, TRAINJOBS
from atomic_gang_provisioner.config import ServerSettings
from atomic_gang_provisioner.kube import KubeClient
from atomic_gang_provisioner.manager import Manager
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.runtime import WorkQueue
from atomic_gang_provisioner.settings import resolve
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import RecordingTransport

Obj = dict[str, Any]


CHECK = "atomic-gang-check"


def manager() -> Manager:
    """A manager whose AdmissionCheck cache holds our check, as after its sync."""
    m = Manager(
        settings=resolve(settings(), ServerSettings()),
        client=KubeClient(RecordingTransport()),
        cloud=FakeCloud.unused(),
        metrics=ProvisionerMetrics.create(),
    )
    check = {
        "metadata": {"name": CHECK, "resourceVersion": "1"},
        "spec": {"controllerName": m.settings.controller_name},
    }
    m.informers.checks.store.upsert(CHECK, check)
    m.on_check_names(check)
    return m


def workload(name: str, *checks: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": "1"},
        "status": {"admissionChecks": [{"name": c, "state": "Pending"} for c in checks]},
    }


def queued(q: WorkQueue[str]) -> list[str]:
    keys = []
    while len(q):
        key = q.get(timeout=0)
        assert key is not None
        keys.append(key)
        q.done(key)
    return sorted(keys)


def test_a_check_change_enqueues_only_the_workloads_that_carry_it() -> None:
    m = manager()
    store = m.informers.workloads.store
    for wl in (
        workload("a", "atomic-gang-check"),
        workload("b", "other-check", "atomic-gang-check"),
        workload("c", "other-check"),
        workload("d"),
    ):
        store.upsert(f"ns/{wl['metadata']['name']}", wl)
    m.on_check({"metadata": {"name": "atomic-gang-check"}})
    assert queued(m.controllers.workload.queue) == ["ns/a", "ns/b"]
    assert queued(m.controllers.admission_check.queue) == ["atomic-gang-check"]


def test_a_workload_moves_in_the_index_when_its_checks_change() -> None:
    m = manager()
    store = m.informers.workloads.store
    store.upsert("ns/a", workload("a"))
    m.on_check({"metadata": {"name": "atomic-gang-check"}})
    assert queued(m.controllers.workload.queue) == []
    store.upsert("ns/a", workload("a", "atomic-gang-check"))  # Kueue added the check's state
    m.on_check({"metadata": {"name": "atomic-gang-check"}})
    assert queued(m.controllers.workload.queue) == ["ns/a"]


def gnp(phase: str, held: int, rv: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "resourceVersion": rv},
        "spec": {"shape": {"count": 2}},
        "status": {"phase": phase, "instanceIds": [f"i-{n}" for n in range(held)]},
    }


def test_pool_watch_events_feed_the_cost_ledger_and_only_the_leader_exports() -> None:
    m = manager()
    informer, cost = m.informers.pools, m.metrics.cost
    informer._apply({"type": "ADDED", "object": gnp("Joining", 2, "1")})
    informer._apply({"type": "MODIFIED", "object": gnp("Satisfied", 2, "2")})
    informer._apply({"type": "DELETED", "object": gnp("Satisfied", 2, "2")})
    assert {state for _, state in cost.totals()} == {"launching", "running"}
    assert m.metrics.pool_stats.pools == informer.list
    assert not cost.exporting()  # not leading
    m.leading.set()
    assert cost.exporting()
    assert m.metrics.pool_stats.exporting()


def job(generation: int, *, active: int = 0, **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": "train",
            "uid": "u-1",
            "generation": generation,
            "labels": {"atomic-gang.k8s.aws/pool": "p"},
            "annotations": annotations,
        },
        "status": {"active": active},
    }


def test_a_jobs_status_update_enqueues_no_workload_its_spec_or_annotations_do() -> None:
    """At scale every pod moves its Job's status: those updates are not read here."""
    m = manager()
    wl = workload("w")
    wl["metadata"]["ownerReferences"] = [
        {"kind": "Job", "name": "train", "uid": "u-1", "controller": True}
    ]
    m.informers.workloads.store.upsert("ns/w", wl)
    informer, q = m.informers.jobs, m.controllers.workload.queue
    informer._apply({"type": "ADDED", "object": job(1)})
    assert queued(q) == ["ns/w"]
    informer._apply({"type": "MODIFIED", "object": job(1, active=3)})
    assert queued(q) == []
    informer._apply({"type": "MODIFIED", "object": job(1, active=3, count="8")})
    assert queued(q) == ["ns/w"]
    informer._apply({"type": "MODIFIED", "object": job(2, active=3, count="8")})
    assert queued(q) == ["ns/w"]
    informer._apply({"type": "DELETED", "object": job(2, active=3, count="8")})
    assert queued(q) == ["ns/w"]


def node(*, ready: str = "True", heartbeat: str = "2026-12-01T10:00:00Z", **labels: str) -> Obj:
    return {
        "metadata": {"name": "ip-10-0-0-1", "labels": {"atomic-gang.k8s.aws/pool": "p", **labels}},
        "spec": {"providerID": "aws:///us-east-1a/i-0123456789abcdef0"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": ready,
                    "lastHeartbeatTime": heartbeat,
                    "lastTransitionTime": "2026-12-01T09:59:00Z",
                }
            ]
        },
    }


def test_a_nodes_heartbeat_enqueues_no_pool_its_readiness_or_labels_do() -> None:
    """At 800 Nodes most updates are heartbeats, which change nothing a pool reads."""
    m = manager()
    informer, q = m.informers.nodes, m.controllers.pool.queue
    informer._apply({"type": "ADDED", "object": node(ready="False")})
    assert queued(q) == ["p"]
    informer._apply({"type": "MODIFIED", "object": node(ready="False", heartbeat="T2")})
    assert queued(q) == []
    informer._apply({"type": "MODIFIED", "object": node(heartbeat="T2")})
    assert queued(q) == ["p"]
    layer = {"topology.k8s.aws/network-node-layer-1": "nn-1"}
    informer._apply({"type": "MODIFIED", "object": node(heartbeat="T3", **layer)})
    assert queued(q) == ["p"]
    informer._apply({"type": "DELETED", "object": node(heartbeat="T3", **layer)})
    assert queued(q) == ["p"]


def claimed(rv: str, phase: str) -> Obj:
    obj = gnp(phase, 2, rv)
    obj["spec"]["claim"] = {"namespace": "ns", "name": "w", "uid": "u"}
    return obj


def test_the_echo_of_our_pool_write_enqueues_the_pool_but_not_its_claimant_again() -> None:
    """The claimant was told when the write was made; another writer's update, or a
    resync, still reaches it."""
    m = manager()
    informer = m.informers.pools
    pools, workloads = m.controllers.pool.queue, m.controllers.workload.queue
    informer._apply({"type": "ADDED", "object": claimed("10", "Joining")})
    assert (queued(pools), queued(workloads)) == (["p"], ["ns/w"])
    m.pool_writes.remember(claimed("12", "Satisfied"))
    informer._apply({"type": "MODIFIED", "object": claimed("12", "Satisfied")})
    assert (queued(pools), queued(workloads)) == (["p"], [])
    informer._apply({"type": "MODIFIED", "object": claimed("13", "Satisfied")})
    assert (queued(pools), queued(workloads)) == (["p"], ["ns/w"])
    moved = claimed("15", "Satisfied")  # a relist: the claim moved and our write, as one
    moved["spec"]["claim"] = {"namespace": "ns", "name": "w2", "uid": "u2"}
    m.pool_writes.remember(moved)
    informer._apply({"type": "MODIFIED", "object": moved})
    assert (queued(pools), queued(workloads)) == (["p"], ["ns/w", "ns/w2"])


def test_the_echo_of_a_launch_budget_wait_enqueues_nothing_its_timer_asks_again() -> None:
    """Re-asking on the echo would find a new count, write it, and ask again on its echo."""
    m = manager()
    informer = m.informers.pools
    pools, workloads = m.controllers.pool.queue, m.controllers.workload.queue
    informer._apply({"type": "ADDED", "object": claimed("10", "Acquiring")})
    assert (queued(pools), queued(workloads)) == (["p"], ["ns/w"])
    waiting = claimed("11", "Acquiring")
    waiting["status"]["lastErrorReason"] = "WaitingForLaunchBudget"
    m.pool_writes.remember(waiting)
    informer._apply({"type": "MODIFIED", "object": waiting})
    assert (queued(pools), queued(workloads)) == ([], [])
    short = claimed("12", "Acquiring")  # another wait (a short cell) keeps the echo's reconcile
    short["status"]["lastErrorReason"] = "WaitingForCapacity"
    m.pool_writes.remember(short)
    informer._apply({"type": "MODIFIED", "object": short})
    assert (queued(pools), queued(workloads)) == (["p"], [])
    kueue = claimed("13", "Acquiring")  # not our write: always looked at
    kueue["status"]["lastErrorReason"] = "WaitingForLaunchBudget"
    informer._apply({"type": "MODIFIED", "object": kueue})
    assert (queued(pools), queued(workloads)) == (["p"], ["ns/w"])


def test_the_echo_of_our_check_apply_enqueues_no_workload() -> None:
    m = manager()
    informer, q = m.informers.workloads, m.controllers.workload.queue
    informer._apply({"type": "ADDED", "object": workload("w", CHECK)})
    assert queued(q) == ["ns/w"]
    ours = {
        **workload("w", CHECK),
        "metadata": {"namespace": "ns", "name": "w", "resourceVersion": "2"},
    }
    m.check_writes.remember(ours)
    informer._apply({"type": "MODIFIED", "object": ours})
    assert queued(q) == []
    kueues = {**ours, "metadata": {**ours["metadata"], "resourceVersion": "3"}}
    kueues["status"] = {**ours["status"], "conditions": [{"type": "Admitted", "status": "True"}]}
    informer._apply({"type": "MODIFIED", "object": kueues})
    assert queued(q) == ["ns/w"]


def with_status(rv: str, **status: Any) -> Obj:
    wl = workload("w", "atomic-gang-check")
    wl["metadata"]["resourceVersion"] = rv
    wl["status"].update(status)
    return wl


def test_kueues_status_churn_enqueues_no_workload_a_change_it_reads_or_a_resync_does() -> None:
    """As the Job's pods start and run Kueue rewrites the Workload's status (condition
    messages, reclaimable pods): nothing the decision reads."""
    m = manager()
    informer, q = m.informers.workloads, m.controllers.workload.queue
    admitted = {"type": "Admitted", "status": "True", "message": "admitted"}
    informer._apply({"type": "ADDED", "object": with_status("1", conditions=[admitted])})
    assert queued(q) == ["ns/w"]
    churn = with_status(
        "2",
        conditions=[{**admitted, "message": "pods running"}],
        reclaimablePods=[{"name": "main", "count": 1}],
    )
    informer._apply({"type": "MODIFIED", "object": churn})
    assert queued(q) == []
    informer._apply({"type": "MODIFIED", "object": churn})  # a resync: the same version
    assert queued(q) == ["ns/w"]
    finished = {"type": "Finished", "status": "True"}
    informer._apply({"type": "MODIFIED", "object": with_status("3", conditions=[finished])})
    assert queued(q) == ["ns/w"]
    evicted = with_status("4", conditions=[finished])
    evicted["status"]["admissionChecks"][0]["state"] = "Retry"
    informer._apply({"type": "MODIFIED", "object": evicted})
    assert queued(q) == ["ns/w"]


def test_the_claimant_of_a_pool_just_satisfied_goes_before_the_workloads_queued() -> None:
    """Its check Ready is what the gang's pods wait for; Kueue's updates and the other
    pools' messages can wait."""
    m = manager()
    q = m.controllers.workload.queue
    for name in ("a", "b"):
        m.on_workload(workload(name))
    m.on_claimant_changed("ns/c", "Acquiring")
    m.on_claimant_changed("ns/d", "Satisfied")
    m.on_claimant_changed("ns/a", "Satisfied")  # already queued: moves up
    order = [q.get(timeout=0) for _ in range(4)]
    assert order == ["ns/d", "ns/a", "ns/b", "ns/c"]


def test_an_owner_kind_the_apiserver_serves_is_cached_and_enqueues_its_workload() -> None:
    """JobSets and TrainJobs are owners as Jobs are: a cache of those with our pool
    label each, when served, and a change of one enqueues the Workload it owns."""
    m = Manager(
        settings=resolve(settings(), ServerSettings()),
        client=KubeClient(RecordingTransport()),
        cloud=FakeCloud.unused(),
        metrics=ProvisionerMetrics.create(),
        owners=(JOBSETS, TRAINJOBS),
    )
    assert set(m.informers.owners) == {"jobsets", "trainjobs"}
    assert set(m.ctx.owners) == {"jobsets", "trainjobs"}
    wl = workload("js")
    wl["metadata"]["ownerReferences"] = [
        {"kind": "JobSet", "name": "allreduce", "uid": "u-js", "controller": True}
    ]
    m.informers.workloads.store.upsert("ns/js", wl)
    jobset = {**job(1), "metadata": {**job(1)["metadata"], "uid": "u-js"}}
    m.informers.owners["jobsets"]._apply({"type": "ADDED", "object": jobset})
    assert queued(m.controllers.workload.queue) == ["ns/js"]
    assert "jobsets" not in manager().informers.owners  # not served: no cache, no watch

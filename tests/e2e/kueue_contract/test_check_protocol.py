"""The external AdmissionCheck protocol with a real Kueue, on every supported version:
our check Active; Pending then Ready with podSetUpdates that pin the pods; a shortfall
turning into Retry, Kueue's eviction and requeue, and our check Pending again (with the
attempt named, and every write one that changed something); a gang evicted by Kueue's
waitForPodsReady; keep-warm reuse by a second Job."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang.resources import ADMISSION_CHECKS, JOBS
from atomic_gang_devstack import dev_objects
from tests.e2e.kueue_contract.conftest import PODS_READY_TIMEOUT_SECONDS, unique
from tests.e2e.kueue_contract.harness import (
    CHECK,
    Seen,
    WorkloadLog,
    check_writes,
    workload_of,
)
from tests.e2e.names import gnp
from tests.e2e.system.harness import System, condition, sample_job
from tests.e2e.system.test_operator_view import explain
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

KUEUE_MESSAGES = ("", "Reset to Pending after eviction")  # what Kueue writes into our entry


def _workload_name(kueue: System, job: dict[str, Any]) -> str:
    ns, uid = job["metadata"]["namespace"], job["metadata"]["uid"]
    wl = wait_for(lambda: workload_of(kueue, ns, uid), timeout=30, what="the Job's Workload")
    return str(wl["metadata"]["name"])


def _ours(versions: list[Seen]) -> list[Seen]:
    """The versions in which our provisioner changed our entry (Kueue's own writes into
    it, the entry's creation and its reset after an eviction, left out)."""
    out: list[Seen] = []
    before: tuple[str, str, int | None] | None = None
    for v in versions:
        now = (v.state, v.message, v.requeue_after_seconds)
        kueues = v.message.startswith(KUEUE_MESSAGES[1]) or v.message == ""
        if now != before and not kueues:
            out.append(v)
        before = now
    return out


def test_our_admission_check_is_active_and_so_is_the_cluster_queue(kueue: System) -> None:
    def active(obj: dict[str, Any]) -> dict[str, Any] | None:
        return condition(obj, "Active")

    ac = wait_for(
        lambda: active(kueue.kube.get(ADMISSION_CHECKS, CHECK)), timeout=30, what="check Active"
    )
    assert ac["reason"] == "Active"
    assert "atomic-gang-provisioner is running" in ac["message"]
    wait_for(
        lambda: active(kueue.kubectl.get("clusterqueue", dev_objects.CLUSTER_QUEUE)),
        timeout=30,
        what="the ClusterQueue Active with our check",
    )


def test_pending_then_ready_with_pod_set_updates_that_pin_the_pods(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    label = unique("kc-ready")
    pool = gnp(namespace, label)
    job = kueue.world.submit(sample_job("gang", namespace, pool=label, count=2, runs_for="2s"))
    ready = kueue.world.wait_check(job, "Ready", timeout=90)

    (update,) = ready["podSetUpdates"]
    group = kueue.world.pool(pool).status.activeGroup  # type: ignore[union-attr]
    assert update["name"] == "main"
    assert update["nodeSelector"] == {keys.POOL: pool, keys.GROUP: group}
    assert update["tolerations"] == [{"key": keys.GANG_TAINT, "operator": "Equal", "value": pool}]
    name = _workload_name(kueue, job)
    states = [v.state for v in _ours(log.of(name))]
    assert states[0] == "Pending", states
    assert states[-1] == "Ready", states
    # Kueue merged the update into the Job, and the pods landed on the gang's nodes.
    wait_for(lambda: kueue.complete(job), timeout=60, what="the Job complete")
    template = kueue.job(job)["spec"]["template"]["spec"]
    assert template["nodeSelector"] == {keys.POOL: pool, keys.GROUP: group}
    gang = set(kueue.gang_nodes(pool))
    pods = [p for p in kueue.pods(namespace) if p["spec"].get("nodeName")]
    assert len(pods) == 2
    assert {p["spec"]["nodeName"] for p in pods} <= gang


def test_a_shortfall_turns_into_retry_kueue_requeues_and_our_check_is_pending_again(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    label = unique("kc-retry")
    zone = "us-east-1c"
    kueue.fake.set_capacity(zone, "p4d.24xlarge", 0)
    writes_before = check_writes(kueue)
    job = kueue.world.submit(
        sample_job("retry", namespace, pool=label, count=2, availability_zones=zone)
    )
    name = _workload_name(kueue, job)

    retry = wait_for(
        lambda: next((v for v in log.of(name) if v.state == "Retry"), None),
        timeout=60,
        what="our check Retry after 2 failed attempts",
    )
    kueue.fake.set_capacity(zone, "p4d.24xlarge", 2)  # room before Kueue's requeue
    assert "2 consecutive failed attempts" in retry.message
    assert retry.requeue_after_seconds == 1

    def reset() -> Seen | None:
        after = log.of(name)[log.of(name).index(retry) :]
        return next((v for v in after if v.state == "Pending" and v.retry_count == 1), None)

    pending = wait_for(reset, timeout=30, what="Kueue's reset of our check to Pending")
    assert pending.message.startswith("Reset to Pending after eviction"), pending
    evicted = wait_for(
        lambda: next(
            (v for v in log.of(name) if v.conditions.get("Evicted", ("", ""))[0] == "True"), None
        ),
        timeout=30,
        what="the Workload evicted",
    )
    assert evicted.conditions["Evicted"][1] == "AdmissionCheck"

    ready = kueue.world.wait_check(job, "Ready", timeout=90)
    assert ready["message"].endswith("(attempt 2 after 1 eviction)"), ready["message"]
    assert ready.get("retryCount") == 1
    code, out, err = explain(kueue.ctx.admin_kubeconfig(), namespace, "retry")
    assert code == 0, err
    assert "attempt 2: Kueue requeued the Workload after 1 eviction by our check's Retry" in out
    ours = _ours(log.of(name))
    requeued = [v for v in ours if v.retry_count == 1 and v.state == "Pending"]
    assert requeued, [(v.state, v.message) for v in ours]
    assert all(v.message.endswith("(attempt 2 after 1 eviction)") for v in requeued)

    # Every write of ours changed the entry: each shows as a version of the Workload.
    wait_for(lambda: kueue.complete(job), timeout=60, what="the Job complete")
    ours = _ours(log.of(name))  # the log's watch has seen the Ready by now
    writes = check_writes(kueue)
    sent = {s: writes.get(s, 0) - writes_before.get(s, 0) for s in ("Pending", "Retry", "Ready")}
    shown = {s: sum(1 for v in ours if v.state == s) for s in ("Pending", "Retry", "Ready")}
    assert sent == shown, f"applies sent {sent}, versions that show them {shown}"
    assert (sent["Retry"], sent["Ready"]) == (1, 1)


def test_kueue_evicts_a_gang_whose_pods_never_become_ready_and_the_claim_is_released(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    label = unique("kc-podsready")
    pool = gnp(namespace, label)
    body = sample_job("stuck", namespace, pool=label, count=2, runs_for="60s")
    # No node carries this label: once admitted, the pods stay Pending (unschedulable).
    body["spec"]["template"]["spec"]["nodeSelector"] = {"e2e.atomic-gang/never": "true"}
    job = kueue.world.submit(body)
    kueue.world.wait_check(job, "Ready", timeout=90)
    name = _workload_name(kueue, job)

    def evicted() -> Seen | None:
        found = (v for v in log.of(name) if v.conditions.get("Evicted", ("", ""))[0] == "True")
        return next(found, None)

    seen = wait_for(
        evicted, timeout=PODS_READY_TIMEOUT_SECONDS + 45, what="Kueue's waitForPodsReady eviction"
    )
    assert seen.conditions["Evicted"][1] == "PodsReadyTimeout"
    wait_for(
        lambda: kueue.kube.get(JOBS, "stuck", namespace=namespace)["spec"].get("suspend"),
        timeout=30,
        what="the Job suspended again",
    )
    kueue.world.wait_pool(
        pool,
        lambda p: p.spec.claim is None and p.status.phase in ("KeepWarm", "Releasing", "Idle"),
        timeout=30,
        what="the claim released and the set kept warm or released",
    )


def test_a_second_job_reuses_the_warm_set_without_a_launch(kueue: System, namespace: str) -> None:
    label = unique("kc-warm")
    pool = gnp(namespace, label)
    first = kueue.world.submit(
        sample_job("first", namespace, pool=label, count=2, runs_for="1s", keep_warm_ttl="2m")
    )
    wait_for(lambda: kueue.complete(first), timeout=90, what="the first Job complete")
    kueue.world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm")
    launches = len(kueue.controller_calls("RunInstances", pool))
    assert launches == 1

    second = kueue.world.submit(
        sample_job("second", namespace, pool=label, count=2, runs_for="1s", keep_warm_ttl="2m")
    )
    ready = kueue.world.wait_check(second, "Ready", timeout=60)
    assert "pods are pinned" in ready["message"]
    wait_for(lambda: kueue.complete(second), timeout=60, what="the second Job complete")
    assert len(kueue.controller_calls("RunInstances", pool)) == launches

"""Nothing holds quota for a Workload we cannot serve, on every supported Kueue: a bare
Workload, and one owned by a kind Kueue admits but we do not serve (a LeaderWorkerSet,
its CRD from its module), are Rejected in one reconcile, and Kueue deactivates them and
frees their quota. An elastic gang Job is denied by the webhook; with the webhook
switched off, the provisioner rejects its Workload."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from atomic_gang import keys
from atomic_gang.resources import WORKLOADS
from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.bins import Bins
from atomic_gang_provisioner.kube import Resource
from tests.e2e.kueue_contract.conftest import unique
from tests.e2e.kueue_contract.harness import Seen, WorkloadLog, webhook_off, workload_of
from tests.e2e.names import gnp
from tests.e2e.system.harness import System, sample_job
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

LWS = Resource(
    "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", namespaced=True, kind="LeaderWorkerSet"
)
# All of the ClusterQueue's CPU and GPUs: a second such Workload gets quota only once the
# first one's is freed.
WHOLE_QUOTA = {
    "cpu": dev_objects.QUOTA["cpu"],
    "nvidia.com/gpu": dev_objects.QUOTA["nvidia.com/gpu"],
}
CONTAINER = {
    "name": "c",
    "image": "registry.k8s.io/pause:3.10",
    "resources": {"requests": WHOLE_QUOTA},
}


@pytest.fixture(scope="package")
def lws_crd(kueue: System) -> None:
    """LeaderWorkerSet's CRD from its module (no LWS controller: only its objects)."""
    path = Bins.load().source("lws") / "config" / "crd" / "bases"
    crd = yaml.safe_load((path / "leaderworkerset.x-k8s.io_leaderworkersets.yaml").read_text())
    # Server-side: the CRD is larger than client-side apply's last-applied annotation allows.
    kueue.kubectl.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(crd))
    name = crd["metadata"]["name"]

    def established() -> bool:
        conditions = (kueue.kubectl.get("crd", name).get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for(established, timeout=60, what=f"CRD {name} established")


def bare_workload(name: str, namespace: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": dev_objects.KUEUE_API,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": dev_objects.LOCAL_QUEUE,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [CONTAINER]}},
                }
            ],
        },
    }


def rejected_then_deactivated(log: WorkloadLog, name: str) -> list[Seen]:
    """Every version up to the one that shows the Workload deactivated and evicted by
    Kueue, after our check was Rejected."""

    def done() -> list[Seen] | None:
        versions = log.of(name)
        rejected = any(v.state == "Rejected" for v in versions)
        last = versions[-1] if versions else None
        evicted = last is not None and last.conditions.get("Evicted", ("",))[0] == "True"
        return versions if rejected and last is not None and not last.active and evicted else None

    try:
        return wait_for(done, timeout=45, what=f"Workload {name} Rejected, deactivated")
    except TimeoutError:
        raise AssertionError(
            f"Workload {name} not Rejected and deactivated: {log.of(name)}"
        ) from None


def assert_quota_freed(kueue: System, namespace: str, log: WorkloadLog) -> None:
    """Kueue's own proof: a Workload asking for the whole quota gets it. (An evicted
    Workload with no Kueue integration for its owner keeps a stale QuotaReserved=True;
    the ClusterQueue no longer counts it.)"""
    probe = unique("quota-probe")
    kueue.kube.create(WORKLOADS, bare_workload(probe, namespace))
    wait_for(
        lambda: any(v.conditions.get("QuotaReserved", ("",))[0] == "True" for v in log.of(probe)),
        timeout=30,
        what="the whole quota reserved for another Workload",
    )


def assert_rejected_in_one_reconcile(versions: list[Seen], *needles: str) -> str:
    """Our first write to the entry is the rejection: nothing waited, nothing held."""
    ours = [v for v in versions if v.message and not v.message.startswith("Reset to Pending")]
    assert ours, versions
    first = ours[0]
    assert first.state == "Rejected", [(v.state, v.message) for v in ours]
    for needle in needles:
        assert needle in first.message
    return first.message


def test_a_bare_workload_is_rejected_and_kueue_frees_its_quota(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    kueue.kube.create(WORKLOADS, bare_workload("bare", namespace))
    versions = rejected_then_deactivated(log, "bare")
    assert any(v.conditions.get("QuotaReserved", ("",))[0] == "True" for v in versions)
    assert_rejected_in_one_reconcile(versions, "has no owner", "batch/v1 Job", "frees its quota")
    assert_quota_freed(kueue, namespace, log)


@pytest.mark.usefixtures("lws_crd")
def test_a_workload_of_a_kind_we_do_not_serve_is_rejected_naming_it(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    lws = kueue.kube.create(
        LWS,
        {
            "apiVersion": LWS.api_version,
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws", "namespace": namespace},
            "spec": {
                "replicas": 1,
                "leaderWorkerTemplate": {
                    "size": 1,
                    "workerTemplate": {"spec": {"containers": [CONTAINER]}},
                },
            },
        },
    )
    owner = {
        "apiVersion": LWS.api_version,
        "kind": "LeaderWorkerSet",
        "name": "lws",
        "uid": lws["metadata"]["uid"],
        "controller": True,
    }
    kueue.kube.create(WORKLOADS, bare_workload("lws-group", namespace, owner))
    versions = rejected_then_deactivated(log, "lws-group")
    assert_rejected_in_one_reconcile(
        versions, "LeaderWorkerSet.leaderworkerset.x-k8s.io 'lws'", "serves only", "batch/v1 Job"
    )
    assert_quota_freed(kueue, namespace, log)


def test_an_elastic_gang_job_is_denied_by_the_webhook(kueue: System, namespace: str) -> None:
    job = sample_job("elastic", namespace, pool=unique("kc-elastic"), count=2)
    job["metadata"]["annotations"][keys.ELASTIC_JOB] = "true"
    done = kueue.kubectl.run("create", "-f", "-", stdin=yaml.safe_dump(job), check=False)
    assert done.returncode != 0
    assert "[ElasticGang]" in done.stderr
    assert keys.ELASTIC_JOB in done.stderr


def test_with_the_webhook_off_the_provisioner_rejects_an_elastic_gang(
    kueue: System, namespace: str, log: WorkloadLog
) -> None:
    label = unique("kc-elastic")
    job = sample_job("elastic", namespace, pool=label, count=2)
    job["metadata"]["annotations"][keys.ELASTIC_JOB] = "true"
    with webhook_off(kueue):
        submitted = kueue.world.submit(job)
    uid = submitted["metadata"]["uid"]
    wl = wait_for(lambda: workload_of(kueue, namespace, uid), timeout=30, what="its Workload")
    versions = rejected_then_deactivated(log, wl["metadata"]["name"])
    message = assert_rejected_in_one_reconcile(versions, "elastic")
    assert "[ElasticGang]" in message or "cannot follow a Job that grows" in message
    assert kueue.world.pool(gnp(namespace, label)) is None  # nothing launched
    assert_quota_freed(kueue, namespace, log)

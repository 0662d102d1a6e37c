"""Issue 3, acceptance 3: Kueue reserves quota for a gang and waits on our check."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_devstack import dev_objects as dev
from tests.e2e.jobs import gang_job
from tests.e2e.kube import Kube, has_condition, wait_for

pytestmark = pytest.mark.e2e


def _workload(kube: Kube, namespace: str, job_uid: str) -> dict[str, Any] | None:
    items = kube.items(
        "workloads.kueue.x-k8s.io", "-n", namespace, "-l", f"kueue.x-k8s.io/job-uid={job_uid}"
    )
    return items[0] if items else None


def _check_state(wl: dict[str, Any]) -> str | None:
    for check in wl.get("status", {}).get("admissionChecks") or []:
        if check["name"] == dev.ADMISSION_CHECK:
            return str(check["state"])
    return None


def test_gang_job_gets_quota_and_waits_pending_on_our_check(kube: Kube, namespace: str) -> None:
    kube.apply(gang_job("gang", namespace, count=2))
    job = kube.get("job", "gang", "-n", namespace)
    uid = job["metadata"]["uid"]

    def reserved() -> dict[str, Any] | None:
        wl = _workload(kube, namespace, uid)
        if wl and has_condition(wl, "QuotaReserved") and _check_state(wl):
            return wl
        return None

    wl = wait_for(reserved, timeout=60, what="a Workload with QuotaReserved=True")

    assert _check_state(wl) == "Pending"
    assert not has_condition(wl, "Admitted")
    assert wl["status"]["admission"]["clusterQueue"] == dev.CLUSTER_QUEUE
    job = kube.get("job", "gang", "-n", namespace)
    assert job["spec"]["suspend"] is True
    pods = kube.items("pods", "-n", namespace, "-l", "batch.kubernetes.io/job-name=gang")
    assert pods == []

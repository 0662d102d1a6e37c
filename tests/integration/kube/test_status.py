"""Status writes: SSA on Kueue's Workload /status keeps other managers' entries; our CRD's
status is written optimistically (a stale resourceVersion is a Conflict)."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_provisioner.kube import ConflictError, KubeClient, Resource
from tests.support import resources as r

pytestmark = pytest.mark.kube

OURS = "atomic-gang.k8s.aws/ec2-atomic"
KUEUE = "kueue-admission"
T0 = "2026-01-01T00:00:00Z"


def workload(name: str, ns: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 2,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    },
                }
            ],
        },
    }


def check(name: str, state: str, message: str = "") -> dict[str, Any]:
    return {"name": name, "state": state, "message": message, "lastTransitionTime": T0}


def apply_checks(
    client: KubeClient, wl: dict[str, Any], manager: str, *entries: dict[str, Any]
) -> dict[str, Any]:
    """What the Workload reconciler sends: identity, resourceVersion, our entries only."""
    m = wl["metadata"]
    body = {
        "apiVersion": r.WORKLOADS.api_version,
        "kind": "Workload",
        "metadata": {
            "name": m["name"],
            "namespace": m["namespace"],
            "resourceVersion": m["resourceVersion"],
        },
        "status": {"admissionChecks": list(entries)},
    }
    return client.apply_status(r.WORKLOADS, body, field_manager=manager)


def by_name(wl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in wl.get("status", {}).get("admissionChecks", [])}


@pytest.mark.usefixtures("workload_crd")
def test_ssa_writes_only_our_admission_check_entry(client: KubeClient, namespace: str) -> None:
    wl = client.create(r.WORKLOADS, workload("job-a-1f2e3", namespace))
    wl = apply_checks(client, wl, KUEUE, check("other-check", "Pending"))
    wl = apply_checks(client, wl, OURS, check("ec2-atomic", "Pending", "Acquiring 4×p4d.24xlarge"))
    checks = by_name(wl)
    assert set(checks) == {"other-check", "ec2-atomic"}

    wl = apply_checks(
        client,
        wl,
        OURS,
        {**check("ec2-atomic", "Ready", "4/4 nodes Ready"), "podSetUpdates": [{"name": "main"}]},
    )
    checks = by_name(wl)
    assert checks["ec2-atomic"]["state"] == "Ready"
    assert checks["ec2-atomic"]["podSetUpdates"] == [{"name": "main"}]
    assert checks["other-check"] == check("other-check", "Pending"), "another manager's entry"
    managers = {f["manager"] for f in wl["metadata"]["managedFields"] if f.get("subresource")}
    assert managers == {KUEUE, OURS}


@pytest.mark.usefixtures("workload_crd")
def test_ssa_with_a_stale_resource_version_is_a_conflict(
    client: KubeClient, namespace: str
) -> None:
    created = client.create(r.WORKLOADS, workload("job-b-0a1b2", namespace))
    apply_checks(client, created, KUEUE, check("other-check", "Pending"))
    with pytest.raises(ConflictError):
        apply_checks(client, created, OURS, check("ec2-atomic", "Ready"))
    assert "ec2-atomic" not in by_name(client.get(r.WORKLOADS, "job-b-0a1b2", namespace=namespace))


def test_own_crd_status_merge_patch_and_replace(client: KubeClient, widget_crd: Resource) -> None:
    w = client.create(widget_crd, {"metadata": {"name": "w-status"}, "spec": {"size": 3}})
    rv0 = w["metadata"]["resourceVersion"]
    w1 = client.patch(
        widget_crd,
        "w-status",
        {"status": {"phase": "Acquiring"}},
        resource_version=rv0,
        subresource="status",
    )
    assert w1["status"] == {"phase": "Acquiring"}
    assert w1["spec"] == {"size": 3}, "status writes never touch spec"
    with pytest.raises(ConflictError):
        client.patch(
            widget_crd,
            "w-status",
            {"status": {"phase": "Idle"}},
            resource_version=rv0,
            subresource="status",
        )

    w1["status"]["phase"] = "Satisfied"
    w1["spec"]["size"] = 99  # ignored by the status subresource
    w2 = client.replace_status(widget_crd, w1)
    assert w2["status"]["phase"] == "Satisfied"
    assert w2["spec"] == {"size": 3}
    with pytest.raises(ConflictError):
        client.replace_status(widget_crd, w1)  # w1 still carries the old resourceVersion


def test_ssa_on_own_crd_keeps_other_list_entries(client: KubeClient, widget_crd: Resource) -> None:
    client.create(widget_crd, {"metadata": {"name": "w-ssa"}, "spec": {"size": 1}})

    def apply(manager: str, *entries: dict[str, str]) -> dict[str, Any]:
        body = {"metadata": {"name": "w-ssa"}, "status": {"entries": list(entries)}}
        return client.apply_status(widget_crd, body, field_manager=manager)

    apply("them", {"name": "x", "state": "theirs"})
    apply("us", {"name": "y", "state": "one"})
    out = apply("us", {"name": "y", "state": "two"})
    assert out["status"]["entries"] == [
        {"name": "x", "state": "theirs"},
        {"name": "y", "state": "two"},
    ]
    out = apply("us")  # we give up our entry; theirs stays
    assert out["status"]["entries"] == [{"name": "x", "state": "theirs"}]

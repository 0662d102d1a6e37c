"""The Active condition of our AdmissionCheck, and the cloud health that feeds it."""

from __future__ import annotations

from atomic_gang_provisioner.reconcilers.admission_checks import desired
from atomic_gang_provisioner.reconcilers.context import CloudHealth


def test_active_when_configured_and_cloud_reachable() -> None:
    assert desired({"spec": {"controllerName": "x"}}, cloud_error="") == (
        True,
        "Active",
        "atomic-gang-provisioner is running and will provision gangs",
    )


def test_parameters_are_a_misconfiguration() -> None:
    active, reason, message = desired(
        {"spec": {"parameters": {"apiGroup": "a", "kind": "K", "name": "n"}}}, cloud_error=""
    )
    assert (active, reason) == (False, "BadParametersRef")
    assert "spec.parameters" in message


def test_cloud_failure_makes_the_check_inactive() -> None:
    active, reason, message = desired({"spec": {}}, cloud_error="UnauthorizedOperation: no")
    assert (active, reason) == (False, "CloudUnavailable")
    assert "UnauthorizedOperation" in message


def test_cloud_health_notifies_only_on_change() -> None:
    seen: list[str] = []
    health = CloudHealth()
    health.on_change = lambda: seen.append(health.error)
    health.report("")
    health.report("boom")
    health.report("boom")
    health.report("")
    assert seen == ["ec2: boom", ""]


def test_every_probe_must_pass() -> None:
    health = CloudHealth()
    health.report("no such cluster", probe="cluster")
    health.report("")
    assert health.error == "cluster: no such cluster"
    assert health.failing("cluster")
    health.report("", probe="cluster")
    assert health.error == ""

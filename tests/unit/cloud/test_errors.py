"""Error classification: one table, one place."""

from __future__ import annotations

import pytest

from atomic_gang_provisioner.cloud.error_codes import (
    NAMED_PERMANENT,
    CloudError,
    classify,
    hint_for,
)


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        pytest.param("InsufficientInstanceCapacity", 500, "capacity", id="ice-is-capacity-not-5xx"),
        pytest.param("ReservationCapacityExceeded", 400, "capacity", id="odcr-full"),
        pytest.param("InsufficientFreeAddressesInSubnet", 400, "capacity", id="subnet-ips"),
        pytest.param("RequestLimitExceeded", 503, "throttled", id="ec2-throttle"),
        pytest.param("ThrottlingException", 400, "throttled", id="json-throttle"),
        pytest.param("InternalError", 500, "transient", id="ec2-5xx"),
        pytest.param("ReadTimeout", None, "transient", id="lost-response"),
        pytest.param("ConnectionError", None, "transient", id="dropped-connection"),
        pytest.param("SomethingNew", 502, "transient", id="unknown-5xx"),
        pytest.param("NotImplemented", 501, "permanent", id="not-implemented"),
        pytest.param("VcpuLimitExceeded", 400, "quota", id="vcpu-quota"),
        pytest.param("InstanceLimitExceeded", 400, "quota", id="instance-quota"),
        pytest.param("InvalidInstanceID.NotFound", 400, "not_found", id="instance-gone"),
        pytest.param("InvalidFoo.NotFound", 400, "not_found", id="any-notfound-suffix"),
        pytest.param("NoSuchEntity", 404, "not_found", id="iam-missing"),
        pytest.param("InvalidAMIID.NotFound", 400, "not_found", id="ami-missing"),
        pytest.param("UnauthorizedOperation", 403, "permanent", id="unauthorized"),
        pytest.param("IdempotentParameterMismatch", 400, "permanent", id="token-mismatch"),
        pytest.param("SomethingNew", 400, "permanent", id="unknown-4xx"),
    ],
)
def test_classify(code: str, status: int | None, expected: str) -> None:
    assert classify(code, status) == expected


@pytest.mark.parametrize(
    ("code", "retryable"),
    [
        ("RequestLimitExceeded", True),
        ("InternalError", True),
        ("InsufficientInstanceCapacity", False),
        ("VcpuLimitExceeded", False),
        ("UnauthorizedOperation", False),
    ],
)
def test_only_throttled_and_transient_retry(code: str, retryable: bool) -> None:
    assert CloudError(code, "m", http_status=500 if retryable else 400).retryable is retryable


def test_permanent_errors_carry_a_hint() -> None:
    assert "controller-policy.json" in hint_for("UnauthorizedOperation")
    assert "ami-id" in hint_for("InvalidAMIID.NotFound")
    assert hint_for("NoSuchCodeAtAll") == ""


def test_an_instance_profile_ec2_does_not_know_yet_is_retried() -> None:
    fresh = CloudError(
        "InvalidParameterValue",
        "Value (atomic-gang-instance-profile-c-r) for parameter iamInstanceProfile.name is "
        "invalid. Invalid IAM Instance Profile name",
    )
    assert fresh.retryable
    assert not CloudError("InvalidParameterValue", "Invalid value for InstanceType").retryable


@pytest.mark.parametrize(
    ("code", "status", "reason"),
    [
        pytest.param("InsufficientInstanceCapacity", 500, "InsufficientCapacity", id="capacity"),
        pytest.param("VcpuLimitExceeded", 400, "QuotaExceeded", id="quota"),
        pytest.param("RequestLimitExceeded", 503, "Throttled", id="throttled"),
        pytest.param("InternalError", 500, "Throttled", id="transient"),
        pytest.param("UnauthorizedOperation", 403, "PermanentError", id="permanent"),
        pytest.param("InvalidInstanceID.NotFound", 400, "PermanentError", id="not-found"),
        pytest.param("SubnetNotInCluster", 400, "InvalidSubnet", id="named-permanent"),
        pytest.param("InvalidPlacementGroup.Unknown", 400, "PlacementGroupNotFound", id="pg"),
    ],
)
def test_an_error_names_the_reason_a_pool_records(code: str, status: int, reason: str) -> None:
    assert CloudError(code, "m", http_status=status).reason == reason


def test_every_named_permanent_error_has_a_permanent_reason() -> None:
    assert all(reason.permanent for reason in NAMED_PERMANENT.values())

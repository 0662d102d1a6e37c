"""Retry policy: only throttled/transient errors, same parameters, injected sleeper."""

from __future__ import annotations

import random
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    CredentialRetrievalError,
    MetadataRetrievalError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)

from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.retry import Backoff


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "RunInstances",
    )


class Scripted:
    """A client whose run_instances raises the scripted errors, then succeeds."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.seen: list[dict[str, Any]] = []

    def run_instances(self, **params: Any) -> dict[str, Any]:
        self.seen.append(params)
        if self.errors:
            raise self.errors.pop(0)
        return {"ok": True}


def caller(sleeps: list[float], attempts: int = 4) -> Caller:
    backoff = Backoff(max_attempts=attempts, base_seconds=1, cap_seconds=4, rng=random.Random(7))
    return Caller(backoff=backoff, sleeper=sleeps.append)


def test_throttling_and_timeouts_are_retried_with_the_same_token() -> None:
    sleeps: list[float] = []
    client = Scripted(client_error("RequestLimitExceeded", 503), ReadTimeoutError(endpoint_url="x"))
    assert caller(sleeps).call(client, "run_instances", ClientToken="t1", MinCount=2) == {
        "ok": True
    }
    assert [p["ClientToken"] for p in client.seen] == ["t1", "t1", "t1"]
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= 1
    assert 0 <= sleeps[1] <= 2


@pytest.mark.parametrize(
    "code", ["InsufficientInstanceCapacity", "VcpuLimitExceeded", "UnauthorizedOperation"]
)
def test_other_errors_are_not_retried(code: str) -> None:
    sleeps: list[float] = []
    client = Scripted(client_error(code, 500 if code.startswith("Insufficient") else 400))
    with pytest.raises(CloudError) as info:
        caller(sleeps).call(client, "run_instances", ClientToken="t")
    assert info.value.code == code
    assert len(client.seen) == 1
    assert sleeps == []


def test_retry_budget_is_bounded() -> None:
    sleeps: list[float] = []
    client = Scripted(*[client_error("InternalError", 500)] * 10)
    with pytest.raises(CloudError) as info:
        caller(sleeps, attempts=3).call(client, "run_instances")
    assert info.value.retryable
    assert len(client.seen) == 3
    assert len(sleeps) == 2


def test_backoff_is_jittered_and_capped() -> None:
    backoff = Backoff(base_seconds=1, cap_seconds=5, rng=random.Random(1))
    delays = [backoff.delay(k) for k in range(10)]
    assert all(0 <= d <= 5 for d in delays)
    assert len(set(delays)) == len(delays)


class Ceiling(random.Random):
    """A "random" source that always picks the top of the range."""

    def uniform(self, a: float, b: float) -> float:
        return b


def test_backoff_ceiling_doubles_each_attempt_up_to_the_cap() -> None:
    backoff = Backoff(base_seconds=0.5, cap_seconds=3, rng=Ceiling())
    assert [backoff.delay(k) for k in range(6)] == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


def test_the_caller_sleeps_the_growing_backoff() -> None:
    sleeps: list[float] = []
    backoff = Backoff(max_attempts=5, base_seconds=1, cap_seconds=5, rng=Ceiling())
    client = Scripted(*[client_error("RequestLimitExceeded", 503)] * 4)
    assert Caller(backoff=backoff, sleeper=sleeps.append).call(client, "run_instances") == {
        "ok": True
    }
    assert sleeps == [1, 2, 4, 5]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(NoCredentialsError(), id="no-credentials"),
        pytest.param(
            CredentialRetrievalError(provider="container-role", error_msg="agent down"),
            id="pod-identity-agent-down",
        ),
        pytest.param(MetadataRetrievalError(error_msg="IMDS timed out"), id="node-role-imds"),
    ],
)
def test_missing_credentials_are_a_classified_cloud_error(error: Exception) -> None:
    """The reaper reports only classified errors as cloud ill-health, so a controller
    that cannot get AWS credentials must raise a CloudError (retried: an agent or IMDS
    can come back), not botocore's own exception."""
    sleeps: list[float] = []
    client = Scripted(*[error] * 4)
    with pytest.raises(CloudError) as info:
        caller(sleeps).call(client, "run_instances")
    assert info.value.code == "CredentialsUnavailable"
    assert type(error).__name__ in info.value.message
    assert info.value.retryable
    assert len(client.seen) == 4


def test_a_bad_parameter_is_our_bug_not_a_cloud_error() -> None:
    client = Scripted(ParamValidationError(report="MinCount must be an integer"))
    with pytest.raises(ParamValidationError):
        caller([]).call(client, "run_instances", MinCount="x")


def test_every_request_is_reported_with_its_outcome() -> None:
    """What atomic_gang_aws_calls_total counts: each attempt, throttles included."""
    sent: list[tuple[str, str]] = []
    backoff = Backoff(max_attempts=4, base_seconds=1, cap_seconds=4, rng=random.Random(7))
    c = Caller(backoff=backoff, sleeper=lambda _s: None, on_call=lambda *o: sent.append(o))
    client = Scripted(
        client_error("RequestLimitExceeded", 503), client_error("InsufficientInstanceCapacity", 500)
    )
    with pytest.raises(CloudError):
        c.call(client, "run_instances", ClientToken="t")
    c.call(client, "run_instances", ClientToken="t")
    with pytest.raises(ParamValidationError):
        c.call(Scripted(ParamValidationError(report="bad")), "run_instances")
    assert sent == [
        ("run_instances", "throttled"),
        ("run_instances", "capacity"),
        ("run_instances", "ok"),
        ("run_instances", "unexpected"),
    ]

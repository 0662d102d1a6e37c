"""The kube adapter's pure parts: paths, error mapping, the Lease record, events' refs."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from atomic_gang_provisioner.kube import (
    AlreadyExistsError,
    ConflictError,
    GoneError,
    InvalidError,
    KubeError,
    NotFoundError,
    Resource,
    ServerError,
    TooManyRequestsError,
    reference,
)
from atomic_gang_provisioner.kube.api_errors import error_from_response, error_from_status
from atomic_gang_provisioner.kube.lease import lease_body, micro_time, record_of
from atomic_gang_provisioner.kube.objects import object_key
from tests.support import resources as r


@pytest.mark.parametrize(
    ("res", "kwargs", "path"),
    [
        pytest.param(r.NODES, {}, "/api/v1/nodes", id="core-cluster-list"),
        pytest.param(
            r.NODES,
            {"name": "n1", "subresource": "status"},
            "/api/v1/nodes/n1/status",
            id="core-status",
        ),
        pytest.param(r.JOBS, {}, "/apis/batch/v1/jobs", id="all-namespaces"),
        pytest.param(
            r.JOBS, {"namespace": "ns"}, "/apis/batch/v1/namespaces/ns/jobs", id="namespaced-list"
        ),
        pytest.param(
            r.WORKLOADS,
            {"namespace": "ns", "name": "w", "subresource": "status"},
            "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status",
            id="crd-status",
        ),
    ],
)
def test_paths(res: Resource, kwargs: dict[str, Any], path: str) -> None:
    assert res.path(**kwargs) == path


def test_a_namespaced_object_needs_a_namespace() -> None:
    with pytest.raises(ValueError, match="namespaced"):
        r.JOBS.path(name="j")
    assert r.JOBS.api_version == "batch/v1"
    assert r.NODES.api_version == "v1"


@pytest.mark.parametrize(
    ("status", "reason", "cls"),
    [
        pytest.param(404, "NotFound", NotFoundError, id="404"),
        pytest.param(409, "Conflict", ConflictError, id="409-conflict"),
        pytest.param(409, "AlreadyExists", AlreadyExistsError, id="409-exists"),
        pytest.param(410, "Expired", GoneError, id="410"),
        pytest.param(422, "Invalid", InvalidError, id="422"),
        pytest.param(429, "TooManyRequests", TooManyRequestsError, id="429"),
        pytest.param(503, "ServiceUnavailable", ServerError, id="503"),
        pytest.param(418, "Teapot", KubeError, id="unknown"),
    ],
)
def test_error_mapping(status: int, reason: str, cls: type[KubeError]) -> None:
    err = error_from_status(status, {"reason": reason, "message": "m"})
    assert type(err) is cls
    assert (err.status, err.reason, err.message) == (status, reason, "m")
    assert err.retryable == (status in (429, 503))


def test_error_from_a_non_json_body() -> None:
    err = error_from_response(502, b"<html>bad gateway</html>")
    assert isinstance(err, ServerError)
    assert "bad gateway" in err.message


def test_object_keys_and_references() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
    }
    assert object_key(job) == "ns/j"
    assert object_key({"metadata": {"name": "n"}}) == "n"
    assert reference(job) == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "j",
        "namespace": "ns",
        "uid": "u",
    }


def body(old: dict[str, Any] | None, holder: str, now: str, *, keep: bool = False) -> Any:
    return lease_body(
        old_lease=old,
        name="l",
        namespace="ns",
        holder=holder,
        duration_seconds=15 if holder else 1,
        now=now,
        keep_acquire=keep,
    )


def test_lease_body_acquire_renew_take_over_release() -> None:
    now = micro_time()
    first = body(None, "a", now)
    assert first["spec"] == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": now,
        "renewTime": now,
        "leaseTransitions": 0,
    }
    assert "resourceVersion" not in first["metadata"]
    stored = {**first, "metadata": {**first["metadata"], "resourceVersion": "7"}}
    renewed = body(stored, "a", "later", keep=True)
    assert renewed["metadata"]["resourceVersion"] == "7"
    assert renewed["spec"]["acquireTime"] == now
    assert renewed["spec"]["renewTime"] == "later"
    taken = record_of(body(stored, "b", "t"))
    assert (taken.holder, taken.transitions) == ("b", 1)
    released = record_of(body(stored, "", "t"))
    assert (released.holder, released.transitions, released.duration) == ("", 0, 1.0)


def test_micro_time_format() -> None:
    assert micro_time(dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)) == (
        "2026-01-02T03:04:05.000006Z"
    )

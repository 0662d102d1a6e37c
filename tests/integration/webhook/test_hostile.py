"""A corpus of >=100 malformed or hostile requests and Jobs: never a 5xx."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from atomic_gang import keys as k
from tests.support.jobs import gang_job
from tests.support.reviews import review
from tests.support.webhook_proc import WebhookProcess

PATH = "/validate/batch/v1/job"


def _mutate(path: list[str], value: Any) -> bytes:
    doc = review(gang_job())
    node: Any = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return json.dumps(doc).encode()


_ODD_VALUES: list[Any] = [None, 0, -1, 2**70, 1.5, True, "", "x" * 10_000, [], {}, [None], {"a": 1}]
_PATHS = [
    ["apiVersion"],
    ["kind"],
    ["request"],
    ["request", "uid"],
    ["request", "kind"],
    ["request", "operation"],
    ["request", "object"],
    ["request", "oldObject"],
    ["request", "object", "metadata"],
    ["request", "object", "spec"],
    ["request", "object", "metadata", "annotations"],
    ["request", "object", "metadata", "labels"],
    ["request", "object", "spec", "parallelism"],
    ["request", "object", "spec", "completions"],
    ["request", "object", "spec", "template"],
]


def _structural() -> list[bytes]:
    return [_mutate(p, v) for p in _PATHS for v in _ODD_VALUES]


def _hostile_jobs() -> list[bytes]:
    out = []
    values = [
        "",
        " ",
        "\x00",
        "💥",
        "a" * 100_000,
        "-1",
        "1e3",
        "0x10",
        "4 ",
        "NaN",
        "²",
        "4²",
        "①",
        "٤",
        "us-east-1a" * 1000,
        "../../etc/passwd",
        "${jndi:ldap://x}",
        "'; DROP TABLE",
    ]
    for key in k.USER_KEYS:
        for value in values:
            job = gang_job()
            target = "labels" if key == k.POOL else "annotations"
            job["metadata"][target][key] = value
            out.append(json.dumps(review(job)).encode())
    many = gang_job()
    many["metadata"]["annotations"].update({f"{k.PREFIX}x{i}": "y" for i in range(2000)})
    out.append(json.dumps(review(many)).encode())
    job = gang_job()
    job["spec"]["template"] = "@DEEP@"
    deep = '{"a":' * 5000 + "{}" + "}" * 5000
    out.append(json.dumps(review(job)).replace('"@DEEP@"', deep).encode())
    return out


def _raw() -> list[bytes]:
    return [
        b"",
        b"{",
        b"null",
        b"[]",
        b"1",
        b'"str"',
        b"\xff" * 100,
        b"{}" * 1000,
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}',
        b"[" * 100_000 + b"]" * 100_000,
    ]


CORPUS = _structural() + _hostile_jobs() + _raw()


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 100


def test_no_request_gets_a_5xx(webhook: WebhookProcess) -> None:
    statuses: dict[int, int] = {}
    with webhook.client(timeout=30) as client:
        for payload in CORPUS:
            r = client.post(PATH, content=payload)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code < 500, (r.status_code, payload[:200], r.text[:300])
            if r.status_code != 200:
                assert "error" in r.json()
    assert statuses.get(400, 0) > 50
    assert statuses.get(200, 0) > 50


def test_body_over_3_mib_is_413(webhook: WebhookProcess) -> None:
    job = gang_job()
    job["metadata"]["annotations"]["pad"] = "x" * (3 * 1024 * 1024)
    with webhook.client(timeout=30) as client:
        r = client.post(PATH, content=json.dumps(review(job)).encode())
    assert r.status_code == 413


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_other_methods_are_not_5xx(webhook: WebhookProcess, method: str) -> None:
    with webhook.client() as client:
        assert client.request(method, PATH).status_code == 405


def test_valid_and_invalid_verdicts(webhook: WebhookProcess) -> None:
    with webhook.client() as client:
        ok = client.post(PATH, content=json.dumps(review(gang_job())).encode()).json()
        bad_job = copy.deepcopy(gang_job(annotations={k.COUNT: "3"}))
        bad = client.post(PATH, content=json.dumps(review(bad_job)).encode()).json()
    assert ok["response"]["allowed"] is True
    assert bad["response"]["allowed"] is False
    assert "CountMismatch" in bad["response"]["status"]["message"]

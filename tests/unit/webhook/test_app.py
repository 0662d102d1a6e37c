"""The FastAPI wiring in-process: size cap, error bodies, metrics, probes."""

from __future__ import annotations

from fastapi.testclient import TestClient

from atomic_gang import keys as k
from atomic_gang_webhook.app import AppState, LogBudget, create_app
from tests.support.jobs import gang_job, settings
from tests.support.reviews import body

PATH = "/validate/batch/v1/job"


def _client(**kw: object) -> tuple[TestClient, AppState]:
    state = AppState(settings=settings(), **kw)  # type: ignore[arg-type]
    return TestClient(create_app(state)), state


def test_denied_review_counts_reasons_in_metrics() -> None:
    client, _ = _client()
    r = client.post(PATH, content=body(gang_job(annotations={k.MODE: "spot"})))
    assert r.status_code == 200
    assert r.json()["response"]["allowed"] is False
    text = client.get("/metrics").text
    assert (
        'atomic_gang_webhook_reviews_total{operation="CREATE",reason="InvalidMode",'
        'verdict="denied"} 1.0' in text
    )
    assert 'atomic_gang_webhook_violations_total{reason="InvalidMode"} 1.0' in text
    assert "atomic_gang_webhook_review_duration_seconds_count 1.0" in text


def test_oversized_body_is_413() -> None:
    client, _ = _client(max_body_bytes=2048)
    r = client.post(PATH, content=b"x" * 4096)
    assert r.status_code == 413
    assert r.json()["error"] == "TooLarge"


def test_oversized_body_without_length_is_413() -> None:
    client, _ = _client(max_body_bytes=2048)
    r = client.post(PATH, content=iter([b"x" * 1024] * 4))  # chunked, no Content-Length
    assert r.status_code == 413


def test_malformed_is_json_400_and_counted() -> None:
    client, _ = _client()
    r = client.post(PATH, content=b"not json")
    assert r.status_code == 400
    assert r.headers["content-type"] == "application/json"
    assert r.json()["error"] == "InvalidJSON"
    assert 'verdict="malformed"' in client.get("/metrics").text


def test_probes() -> None:
    client, state = _client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    state.ready = False
    assert client.get("/readyz").status_code == 503


def test_wrong_method_is_not_5xx() -> None:
    client, _ = _client()
    assert client.get(PATH).status_code == 405


def test_denial_log_budget() -> None:
    budget = LogBudget(per_second=2)
    assert budget.take(10.0) == 0
    assert budget.take(10.5) == 0
    assert budget.take(10.9) is None
    assert budget.take(10.95) is None
    assert budget.take(11.0) == 2  # the next second reports what was skipped

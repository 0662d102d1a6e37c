"""The webhook's log is JSON lines that name a review, never dump the object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atomic_gang import keys as k
from tests.support.jobs import gang_job
from tests.support.reviews import review
from tests.support.wait import wait_for
from tests.support.webhook_proc import WebhookProcess, run_webhook

PATH = "/validate/batch/v1/job"
SECRET_IMAGE = "registry.example/secret-trainer:do-not-log"


def _lines(log: Path) -> list[dict[str, Any]]:
    out = []
    for raw in log.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            out.append(json.loads(raw))  # every line must be one JSON object
    return out


def _denied_job() -> dict[str, Any]:
    job = gang_job(annotations={k.MODE: "spot"}, name="leaky-job")
    job["spec"]["template"]["spec"]["containers"][0]["image"] = SECRET_IMAGE
    return job


def test_log_lines_are_json_and_never_carry_the_object(tmp_path: Path) -> None:
    with run_webhook(tmp_path) as wh:
        _post_denied_and_malformed(wh)
        wait_for(
            lambda: any(line.get("msg") == "denied" for line in _lines(wh.log)),
            timeout=10,
            what="the denial log line",
        )
    lines = _lines(wh.log)
    assert all({"ts", "level", "logger", "msg"} <= line.keys() for line in lines)
    denied = next(line for line in lines if line["msg"] == "denied")
    assert denied["job"] == "leaky-job"
    assert denied["reasons"] == ["InvalidMode"]
    assert any(line["msg"] == "malformed review" for line in lines)
    text = wh.log.read_text(encoding="utf-8")
    assert SECRET_IMAGE not in text
    assert '"containers"' not in text


def _post_denied_and_malformed(wh: WebhookProcess) -> None:
    body = review(_denied_job())
    with wh.client() as client:
        r = client.post(PATH, json=body)
        assert r.status_code == 200
        assert r.json()["response"]["allowed"] is False
        bad = client.post(PATH, content=b'{"kind": "AdmissionReview"}')
        assert bad.status_code == 400

"""FastAPI wiring: the admission route, health probes and /metrics.

The route reads the body with a hard size cap, hands it to the pure
``review`` module and turns WebhookError into a JSON 4xx. Unexpected errors
are a 500 only for *our* bugs; bad input never reaches that path.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from atomic_gang import GangSettings
from atomic_gang_webhook.config import MAX_BODY_BYTES
from atomic_gang_webhook.metrics import WebhookMetrics
from atomic_gang_webhook.review import (
    WebhookError,
    build_response,
    decide,
    parse_review,
)

log = logging.getLogger("atomic_gang_webhook.review")
JSON = "application/json"


@dataclass
class LogBudget:
    """At most ``per_second`` denial lines a second: a CI job looping on a bad Job must
    not flood the log (every denial is still counted in the metrics)."""

    per_second: int = 20
    window: int = 0
    used: int = 0
    suppressed: int = 0

    def take(self, now: float) -> int | None:
        """None: stay quiet; else the number of lines suppressed since the last one."""
        second = int(now)
        if second != self.window:
            self.window, self.used = second, 0
        if self.used >= self.per_second:
            self.suppressed += 1
            return None
        self.used += 1
        skipped, self.suppressed = self.suppressed, 0
        return skipped


@dataclass
class AppState:
    settings: GangSettings
    metrics: WebhookMetrics = field(default_factory=WebhookMetrics.create)
    max_body_bytes: int = MAX_BODY_BYTES
    ready: bool = True
    log_budget: LogBudget = field(default_factory=LogBudget)


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.gang
    return state


State = Annotated[AppState, Depends(get_state)]


def _json(status: int, body: object) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON)


async def _read_capped(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise WebhookError(413, "TooLarge", f"body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise WebhookError(413, "TooLarge", f"body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


admission = APIRouter()


@admission.post("/validate/batch/v1/job")
async def validate_job(request: Request) -> Response:
    started = time.perf_counter()
    state = get_state(request)  # not Depends(): this is the hot path
    m = state.metrics
    try:
        body = await _read_capped(request, state.max_body_bytes)
        req = parse_review(body)
        decision = decide(req, state.settings)
    except WebhookError as err:
        m.reviews.labels("", "malformed", err.reason).inc()
        log.info("malformed review", extra={"status": err.status, "reason": err.reason})
        return _json(err.status, err.body())
    finally:
        m.latency.observe(time.perf_counter() - started)
    m.reviews.labels(req.operation, decision.verdict, decision.reason).inc()
    if decision.verdict == "denied":
        for v in decision.violations:
            m.violations.labels(v.reason).inc()
        skipped = state.log_budget.take(time.monotonic())
        if skipped is not None:
            log.info(
                "denied",
                extra={
                    "uid": req.uid,
                    "operation": req.operation,
                    "namespace": req.namespace,
                    "job": req.name,
                    "reasons": [v.reason for v in decision.violations],
                    "suppressed_since_last": skipped,
                },
            )
    return _json(200, build_response(req, decision))


probes = APIRouter()


@probes.get("/healthz")
async def healthz() -> Response:
    return _json(200, {"status": "ok"})


@probes.get("/readyz")
async def readyz(state: State) -> Response:
    return _json(200 if state.ready else 503, {"ready": state.ready})


@probes.get("/metrics")
async def metrics(state: State) -> Response:
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)


def create_app(state: AppState) -> FastAPI:
    app = FastAPI(
        title="atomic-gang webhook",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.gang = state
    app.include_router(admission)
    app.include_router(probes)
    return app

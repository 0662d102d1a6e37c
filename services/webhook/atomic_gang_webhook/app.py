"""FastAPI wiring: the admission endpoint (bare ASGI, see ``admission``), health
probes and /metrics."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.routing import Route

from atomic_gang_webhook.admission import PATH, AdmissionEndpoint
from atomic_gang_webhook.state import AppState, LogBudget

__all__ = ["AppState", "LogBudget", "create_app"]
JSON = "application/json"


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.gang
    return state


State = Annotated[AppState, Depends(get_state)]


def _json(status: int, body: object) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON)


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
        # Prometheus is our telemetry; FastAPI's OpenTelemetry hooks cost ~20 us a request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.gang = state
    app.router.routes.append(Route(PATH, AdmissionEndpoint(state), methods=["POST"]))
    app.include_router(probes)
    return app

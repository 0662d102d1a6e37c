"""Ceilings for bench/webhook.py: uvicorn apps that answer every POST with a canned
"allowed" AdmissionReview and read nothing.

``app``        the baseline, "the ceiling of this stack": a FastAPI route on
               uvicorn, what any FastAPI endpoint pays before it does any work.
``bare_asgi``  reference only: the same answer as a bare ASGI callable, the ceiling of
               uvicorn + TLS alone. Our admission endpoint skips FastAPI's middleware
               (``atomic_gang_webhook.app.FastPath``), so it is shown side by side.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Response

CANNED = (
    b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",'
    b'"response":{"uid":"canned","allowed":true}}'
)
HEADERS = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(CANNED))]


async def bare_asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:  # drain the body like a real endpoint must
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": CANNED})


app = FastAPI(
    docs_url=None,
    redoc_url=None,
    openapi_url=None,
    telemetry={"tracing": False, "metrics": False, "logs": False},
)


@app.post("/validate/batch/v1/job")
async def canned() -> Response:
    return Response(CANNED, media_type="application/json")

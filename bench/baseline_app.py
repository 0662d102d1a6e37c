"""The ceiling of our stack for bench/webhook.py: a minimal FastAPI app on uvicorn
that answers every POST with a canned "allowed" AdmissionReview."""

from __future__ import annotations

from fastapi import FastAPI, Response

CANNED = (
    b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",'
    b'"response":{"uid":"canned","allowed":true}}'
)
app = FastAPI(
    docs_url=None,
    redoc_url=None,
    openapi_url=None,
    telemetry={"tracing": False, "metrics": False, "logs": False},  # the stack's ceiling
)


@app.post("/validate/batch/v1/job")
async def canned() -> Response:
    return Response(CANNED, media_type="application/json")

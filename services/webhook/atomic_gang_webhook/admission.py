"""The admission endpoint as a bare ASGI app: the one hot path of the service.

It reads the body with a hard size cap straight from ``receive``, hands
it to the pure ``review`` module, counts the verdict, and answers with pre-encoded
JSON. Skipping the framework's Request/Response objects and dependency injection
saves a third of the per-request cost. Bad input is a 4xx, never a 5xx; after a 413
the connection is closed rather than the rest of the body read. Log lines
are rate-limited and their fields clipped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from atomic_gang.errors import clip
from atomic_gang_webhook import review
from atomic_gang_webhook.review import (
    Decision,
    ReviewRequest,
    WebhookError,
    build_response,
    parse_review,
)
from atomic_gang_webhook.state import AppState, LogBudget

log = logging.getLogger("atomic_gang_webhook.review")
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
PATH = "/validate/batch/v1/job"
CLOSE_AFTER = frozenset({413})  # the rest of the body is never read


def _declared_length(scope: Message) -> int | None:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            return int(value) if value.isascii() and value.isdigit() else None
    return None


async def read_capped(scope: Message, receive: Receive, limit: int) -> bytes:
    # The body's deadline is the protocol's (guards.py): it answers 408 and closes.
    declared = _declared_length(scope)
    if declared is not None and declared > limit:
        raise WebhookError(413, "TooLarge", f"body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise WebhookError(400, "Disconnected", "the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise WebhookError(413, "TooLarge", f"body exceeds {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def respond(send: Send, status: int, payload: object) -> None:
    body = orjson.dumps(payload)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status in CLOSE_AFTER:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class AdmissionEndpoint:
    def __init__(self, state: AppState) -> None:
        self.state = state

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        state, m = self.state, self.state.metrics.tally
        try:
            body = await read_capped(scope, receive, state.max_body_bytes)
            req = parse_review(body)
            decision = review.decide(req, state.settings)
        except WebhookError as err:
            m.observe(time.perf_counter() - started)
            m.review("", "malformed", err.reason)
            self._log_malformed(err)
            await respond(send, err.status, err.body())
            return
        self._count(req, decision)
        await respond(send, 200, build_response(req, decision))
        m.observe(time.perf_counter() - started)

    def _log_malformed(self, err: WebhookError) -> None:
        fields = {"status": err.status, "reason": err.reason}
        _log_within(self.state.malformed_budget, "malformed review", lambda: fields)

    def _count(self, req: ReviewRequest, decision: Decision) -> None:
        m = self.state.metrics.tally
        m.review(req.operation, decision.verdict, decision.reason)
        if decision.verdict != "denied":
            return
        for v in decision.violations:
            m.violation(v.reason)
        _log_within(
            self.state.log_budget,
            "denied",
            lambda: {
                "uid": req.uid,
                "operation": req.operation,
                "namespace": clip(req.namespace, 63),
                "job": clip(req.name, 253),
                "reasons": [v.reason for v in decision.violations],
                "more_violations": decision.omitted,
            },
        )


def _log_within(budget: LogBudget, message: str, fields: Callable[[], dict[str, Any]]) -> None:
    """Log ``message`` if ``budget`` allows a line now, saying how many it held back;
    ``fields`` is only built for a line that is written."""
    skipped = budget.take(time.monotonic())
    if skipped is not None:
        log.info(message, extra={**fields(), "suppressed_since_last": skipped})

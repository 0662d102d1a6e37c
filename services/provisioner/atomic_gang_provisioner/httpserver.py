"""/metrics, /healthz and /readyz on one small threaded HTTP server (the probes answer
as the webhook's do: ``atomic_gang.startup``).

Bounded, since any client that reaches the port may misbehave: at most
``Limits.connections`` connections at once (one thread each; a connection past the cap
is closed at accept), each read waits at most ``Limits.read_seconds``, and a request
must be complete (its line and headers) within ``Limits.request_seconds`` of the
accept, or its connection is shut: a client sending a byte now and then cannot hold a
thread. Request lines and headers are capped (``Limits.header_bytes``).

/metrics answers only whom ``metrics_access`` allows, when given one (the chart's
default); the probes answer anyone.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from atomic_gang import startup
from atomic_gang_provisioner.metrics_access import MetricsAccess, Verdict

DENIED = {
    Verdict.NO_TOKEN: "a bearer token the apiserver accepts is required",
    Verdict.FORBIDDEN: "the token's user may not get the non-resource URL /metrics",
    Verdict.UNAVAILABLE: "the apiserver did not answer the token review; try again",
}


@dataclass(frozen=True, slots=True)
class Limits:
    connections: int = 32  # probes and a scraper or two need a handful
    read_seconds: float = 5.0
    request_seconds: float = 10.0
    header_bytes: int = 16 * 1024


class HeadTooLargeError(Exception):
    """The request line and headers passed ``Limits.header_bytes``."""


class _HeadBudget:
    """The connection's reader, raising once the request's head passes its budget (the
    stock parser allows 100 header lines of 64 KiB each)."""

    def __init__(self, raw: Any, budget: int) -> None:
        self._raw, self._left = raw, budget

    def readline(self, size: int = -1) -> bytes:
        line: bytes = self._raw.readline(size)
        self._left -= len(line)
        if self._left < 0:
            raise HeadTooLargeError
        return line

    def unlimit(self) -> None:
        self._left = 1 << 62

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class BoundedServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that refuses connections past ``limits.connections``."""

    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 stalls a burst of connects for 1 s each

    def __init__(self, address: tuple[str, int], handler: type[Any], limits: Limits) -> None:
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.connections)
        self.refused = 0  # connections closed at accept (the cap was reached)
        super().__init__(address, handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        if self._slots.acquire(blocking=False):
            return True
        self.refused += 1
        return False  # socketserver closes it

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client cut off at a limit, or gone: nothing to report (no traceback)."""


def serve(
    *,
    host: str,
    port: int,
    registry: CollectorRegistry,
    ready: Callable[[], bool],
    limits: Limits | None = None,
    access: MetricsAccess | None = None,
) -> BoundedServer:
    bounds = limits or Limits()

    class Handler(BaseHTTPRequestHandler):
        timeout = bounds.read_seconds  # each read on the socket (StreamRequestHandler)

        def setup(self) -> None:
            super().setup()
            self.rfile = _HeadBudget(self.rfile, bounds.header_bytes)  # type: ignore[assignment]
            # The whole request within its deadline, however slowly it trickles in.
            self._deadline = threading.Timer(bounds.request_seconds, self._cut)
            self._deadline.daemon = True
            self._deadline.start()

        def _cut(self) -> None:
            with contextlib.suppress(OSError):  # already closed
                self.connection.shutdown(socket.SHUT_RDWR)

        def finish(self) -> None:
            self._deadline.cancel()
            super().finish()

        def parse_request(self) -> bool:
            ok = super().parse_request()
            if ok:
                self.rfile.unlimit()  # type: ignore[attr-defined]
                self._deadline.cancel()  # the answer is ours to send, not the client's
            return ok

        def do_GET(self) -> None:
            if self.path == "/metrics":
                self._metrics()
            elif self.path == "/healthz":
                self._json(*startup.liveness())
            elif self.path == "/readyz":
                self._json(*startup.readiness(ready()))
            else:
                self._json(404, {"detail": "Not Found"})

        def _metrics(self) -> None:
            verdict = access.check(self.headers.get("Authorization")) if access else None
            if verdict is None or verdict is Verdict.ALLOWED:
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            else:
                self._json(verdict.value, {"detail": DENIED[verdict]})

        def _json(self, code: int, body: object) -> None:
            self._send(code, json.dumps(body).encode(), "application/json")

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = BoundedServer((host, port), Handler, bounds)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server

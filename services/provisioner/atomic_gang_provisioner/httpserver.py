"""/metrics, /healthz and /readyz on small threaded HTTP servers. ``serve`` answers all
three on the metrics port, ``serve_probes`` the probes alone on a port of their own (the
chart's kubelet probes): clients holding the metrics port cannot fail a liveness probe
and get the active replica restarted. Probe answers are the webhook's (``atomic_gang.startup``).

Bounded, since any client that reaches a port may misbehave (``Limits``). At the cap a
new connection sheds the oldest one still waiting for its request head instead of being
refused: a slow client loses its place, not a probe or a scrape, which send their request
at once. /metrics answers only whom ``metrics_access`` allows, when given one (the
chart's default); the probes answer anyone.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from atomic_gang import startup
from atomic_gang_provisioner.metrics_access import MetricsAccess, Verdict

DENIED = {
    Verdict.NO_TOKEN: "a bearer token the apiserver accepts is required",
    Verdict.FORBIDDEN: "the token's user may not get the non-resource URL /metrics",
    Verdict.UNAVAILABLE: "the apiserver did not answer the token review; try again",
}
CLOSED = "atomic_gang_http_connections_closed"


@dataclass(frozen=True, slots=True)
class Limits:
    connections: int = 32  # a scraper or two and the probes need a handful; a thread each
    read_seconds: float = 5.0  # each read (and write) on the socket
    # A request's line and headers complete within this of the accept, however slowly
    # they trickle in, and within header_bytes; else its connection is shut.
    request_seconds: float = 10.0
    header_bytes: int = 16 * 1024


# The kubelet sends at most three probes at once (startup, liveness, readiness).
PROBE_LIMITS = Limits(connections=8)


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


def _shut(conn: socket.socket) -> None:
    """End the connection's blocked read at once; its own thread closes it."""
    with contextlib.suppress(OSError):  # already closed
        conn.shutdown(socket.SHUT_RDWR)


class _Held:
    """The connections a server holds: those still waiting for their request head, in
    accept order, and those being answered."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._lock = threading.Lock()
        self._waiting: dict[socket.socket, None] = {}  # insertion order: the oldest first
        self._answering: set[socket.socket] = set()

    def admit(self, conn: socket.socket) -> tuple[bool, socket.socket | None]:
        """Whether ``conn`` may stay, and which waiting connection leaves to make room."""
        with self._lock:
            shed = None
            if len(self._waiting) + len(self._answering) >= self._cap:
                if not self._waiting:
                    return False, None
                shed = next(iter(self._waiting))
                del self._waiting[shed]
            self._waiting[conn] = None
            return True, shed

    def answering(self, conn: socket.socket) -> bool:
        """Mark ``conn``'s head complete; False when it was shed while the head came in."""
        with self._lock:
            if conn not in self._waiting:
                return False
            del self._waiting[conn]
            self._answering.add(conn)
            return True

    def release(self, conn: socket.socket) -> None:
        with self._lock:
            self._waiting.pop(conn, None)
            self._answering.discard(conn)

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting) + len(self._answering)


class BoundedServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer holding at most ``limits.connections`` connections: at the
    cap a new one sheds the oldest still waiting for its request head, else is refused."""

    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 stalls a burst of connects for 1 s each

    def __init__(self, address: tuple[str, int], handler: type[Any], limits: Limits) -> None:
        self.limits = limits
        self.held = _Held(limits.connections)
        self.shed = 0  # connections cut before their request head, to admit a newer one
        self.refused = 0  # connections closed at accept: every held one was being answered
        super().__init__(address, handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        admitted, shed = self.held.admit(request)
        if shed is not None:
            self.shed += 1
            _shut(shed)
        if not admitted:
            self.refused += 1
        return admitted  # socketserver closes a refused one

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.held.release(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client cut off at a limit, or gone: nothing to report (no traceback)."""


class ClosedConnections(Collector):
    """``atomic_gang_http_connections_closed_total{listener,reason}``: each server's
    connections shed (``shed``) or closed at accept (``refused``), read at scrape time."""

    def __init__(self, servers: Mapping[str, BoundedServer]) -> None:
        self._servers = dict(servers)

    def describe(self) -> Iterator[Metric]:
        return iter([self._family()])

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        for listener, server in self._servers.items():
            family.add_metric([listener, "shed"], server.shed)
            family.add_metric([listener, "refused"], server.refused)
        yield family

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            CLOSED,
            "Connections closed to keep the cap: shed (the oldest still sending its request "
            "head, for a newer one) or refused (every held one was being answered).",
            labels=["listener", "reason"],
        )


@dataclass(frozen=True, slots=True)
class _Metrics:
    registry: CollectorRegistry
    access: MetricsAccess | None


def serve(
    *,
    host: str,
    port: int,
    registry: CollectorRegistry,
    ready: Callable[[], bool],
    limits: Limits | None = None,
    access: MetricsAccess | None = None,
) -> BoundedServer:
    """/metrics, /healthz and /readyz, served from a thread of their own."""
    bounds = limits or Limits()
    handler = _handler(bounds, ready=ready, metrics=_Metrics(registry, access))
    return _start(host, port, handler, bounds, name="http")


def serve_probes(
    *, host: str, port: int, ready: Callable[[], bool], limits: Limits = PROBE_LIMITS
) -> BoundedServer:
    """/healthz and /readyz alone, served from a thread of their own."""
    return _start(host, port, _handler(limits, ready=ready, metrics=None), limits, name="probes")


def _start(
    host: str, port: int, handler: type[BaseHTTPRequestHandler], bounds: Limits, *, name: str
) -> BoundedServer:
    server = BoundedServer((host, port), handler, bounds)
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server


def _handler(
    bounds: Limits, *, ready: Callable[[], bool], metrics: _Metrics | None
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = bounds.read_seconds  # each read on the socket (StreamRequestHandler)

        def setup(self) -> None:
            super().setup()
            self.rfile = _HeadBudget(self.rfile, bounds.header_bytes)  # type: ignore[assignment]
            # The whole request within its deadline, however slowly it trickles in.
            self._deadline = threading.Timer(bounds.request_seconds, _shut, [self.connection])
            self._deadline.daemon = True
            self._deadline.start()

        def finish(self) -> None:
            self._deadline.cancel()
            super().finish()

        def parse_request(self) -> bool:
            if not super().parse_request():
                return False
            self.rfile.unlimit()  # type: ignore[attr-defined]
            self._deadline.cancel()  # the answer is ours to send, not the client's
            # A connection shed while its head came in reads an early end of headers:
            # it gets no answer (its socket is shut).
            return cast(BoundedServer, self.server).held.answering(self.connection)

        def do_GET(self) -> None:
            if self.path == "/metrics" and metrics is not None:
                self._metrics(metrics)
            elif self.path == "/healthz":
                self._json(*startup.liveness())
            elif self.path == "/readyz":
                self._json(*startup.readiness(ready()))
            else:
                self._json(404, {"detail": "Not Found"})

        def _metrics(self, metrics: _Metrics) -> None:
            access = metrics.access
            verdict = access.check(self.headers.get("Authorization")) if access else None
            if verdict is None or verdict is Verdict.ALLOWED:
                self._send(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
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

    return Handler

"""/metrics, /healthz and /readyz on one small threaded HTTP server (the probes answer
as the webhook's do: ``atomic_gang.startup``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from atomic_gang import startup


def serve(
    *, host: str, port: int, registry: CollectorRegistry, ready: Callable[[], bool]
) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif self.path == "/healthz":
                self._json(*startup.liveness())
            elif self.path == "/readyz":
                self._json(*startup.readiness(ready()))
            else:
                self._json(404, {"detail": "Not Found"})

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

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server

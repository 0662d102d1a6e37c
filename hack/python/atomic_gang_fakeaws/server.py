"""Server mode: moto's WSGI app behind our middleware, for a separate process.

The middleware serves the JSON control API under ``/_fake`` and, when a
``lost_response`` or ``timeout`` rule fired for a request, shuts the client's
socket instead of answering, so a controller in another process sees a dropped
connection after the side effect, exactly like a lost EC2 response. A ticker
thread applies EC2's end of each Capacity Block in real time.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from pydantic import ValidationError
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from atomic_gang_fakeaws.control import FakeAws
from atomic_gang_fakeaws.dispatch import take_drop_flag
from atomic_gang_fakeaws.ec2_reservations import expire_blocks
from atomic_gang_fakeaws.netcontrol import ROUTES as NETWORK_ROUTES
from atomic_gang_fakeaws.patches import install_patches
from atomic_gang_fakeaws.reservations import ReservationSpec
from atomic_gang_fakeaws.state import FakeState, activate

TICK_SECONDS = 0.25
Handler = Callable[[FakeAws, dict[str, Any], Request], Any]


def _capacity(fake: FakeAws, body: dict[str, Any], _: Request) -> Any:
    fake.set_capacity(body["zone"], body["instanceType"], body.get("count"))
    return {"ok": True}


def _reservation(fake: FakeAws, body: dict[str, Any], _: Request) -> Any:
    fake.put_reservation(ReservationSpec.model_validate(body))
    return {"ok": True}


def _calls(fake: FakeAws, _: dict[str, Any], req: Request) -> Any:
    return fake.calls(req.args.get("action"))


ROUTES: dict[tuple[str, str], Handler] = {
    ("GET", "/health"): lambda f, b, r: {"ok": True},
    ("PUT", "/capacity"): _capacity,
    ("PUT", "/default-capacity"): lambda f, b, r: f.set_default_capacity(b.get("count")),
    ("POST", "/reservations"): _reservation,
    ("GET", "/block-terminations"): lambda f, b, r: f.block_terminations(),
    ("POST", "/rules"): lambda f, b, r: f.add_rule(b).model_dump(),
    ("GET", "/rules"): lambda f, b, r: [x.model_dump() for x in f.state.rules],
    ("DELETE", "/rules"): lambda f, b, r: f.clear_rules(),
    ("PUT", "/throttling"): lambda f, b, r: f.set_throttling(bool(b["enabled"])),
    ("PUT", "/eni-detach-polls"): lambda f, b, r: f.set_eni_detach_polls(int(b["polls"])),
    ("GET", "/calls"): _calls,
    ("DELETE", "/calls"): lambda f, b, r: f.clear_calls(),
    ("POST", "/instance-states"): lambda f, b, r: f.instance_states(
        tags=dict(b["tags"]), region=str(b["region"])
    ),
    **NETWORK_ROUTES,
}


class FakeAwsApp:
    def __init__(self, inner: Any, fake: FakeAws) -> None:
        self.inner = inner
        self.fake = fake

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if path.startswith("/_fake/"):
            control: Iterable[bytes] = self._control(environ, start_response, path[len("/_fake") :])
            return control
        result: Any = self.inner(environ, start_response)
        if take_drop_flag():
            sock = environ.get("werkzeug.socket")
            if sock is not None:
                # The side effect already happened; the client never hears of it.
                sock.shutdown(socket.SHUT_RDWR)
            return []
        out: Iterable[bytes] = result
        return out

    def _control(self, environ: dict[str, Any], start_response: Any, path: str) -> Any:
        req = Request(environ)
        handler = ROUTES.get((req.method, path))
        if handler is None:
            return Response("not found", status=404)(environ, start_response)
        try:
            body = json.loads(req.get_data().decode() or "{}")
            out = handler(self.fake, body, req)
        except (KeyError, ValueError, ValidationError) as err:
            resp = Response(json.dumps({"error": str(err)}), 400, mimetype="application/json")
            return resp(environ, start_response)
        payload = json.dumps({"ok": True} if out is None else out, default=str)
        return Response(payload, mimetype="application/json")(environ, start_response)


def make_app(state: FakeState) -> FakeAwsApp:
    install_patches()
    state.server_mode = True
    activate(state)
    return FakeAwsApp(DomainDispatcherApplication(create_backend_app), FakeAws(state))


class QuietRequestHandler(MotoRequestHandler):
    """Logs the requests that failed, not every answered one: a line per call was a
    noticeable share of the server's CPU in bench.scale's launch rush (the layer's own
    call log, ``/_fake/calls``, keeps every call)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if not str(code).startswith(("2", "3")):
            super().log_request(code, size)


class ThreadedFakeServer:
    """The layer's server on a background thread (tests, the dev stack)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.state = FakeState()
        self._server: BaseWSGIServer = make_server(
            host, port, make_app(self.state), threaded=True, request_handler=QuietRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        """Real time moves the reservations: EC2 ends a block whether or not anyone calls."""
        while not self._stop.wait(TICK_SECONDS):
            expire_blocks(self.state)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        shown = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{shown}:{port}"

    def start(self) -> ThreadedFakeServer:
        self._thread.start()
        self._ticker.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._thread.join()
        self._ticker.join()
        activate(None)

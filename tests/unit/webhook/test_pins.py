"""The HTTP stack the webhook's speed-ups and guards are built into, against its pins.

``transport``, ``guards`` and ``gate`` subclass uvicorn's ``HttpToolsProtocol``, read
its attributes and rely on how uvloop's ``start_tls`` feeds its TLS protocol: internal
APIs, so uvicorn, httptools and uvloop are pinned exactly (pyproject.toml, and the
image's docker/requirements-webhook.txt). When a pin moves, these tests fail first and
say which pin and which of the internals moved, before a server misbehaves.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import uvloop.loop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from atomic_gang_webhook.app import AppState, create_app
from tests.support.jobs import settings
from tests.support.transports import FakeTransport

ROOT = Path(__file__).parents[3]
STACK = ("uvicorn", "httptools", "uvloop")
# What we override or call, with the parameters uvicorn 0.54.0 gives it.
METHODS = {
    "__init__": ["self", "config", "server_state", "app_state", "_loop"],
    "connection_made": ["self", "transport"],
    "data_received": ["self", "data"],
    "connection_lost": ["self", "exc"],
    "on_message_begin": ["self"],
    "on_headers_complete": ["self"],
    "on_message_complete": ["self"],
    "pause_writing": ["self"],
    "resume_writing": ["self"],
}
USERS = "atomic_gang_webhook.transport, .guards and .gate"


def _pins() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    found = (re.match(r"([A-Za-z0-9_.-]+)\s*==\s*([^;\s]+)", d) for d in deps)
    return {m.group(1).lower(): m.group(2) for m in found if m}


PINS = _pins()


def _moved(what: str) -> str:
    return (
        f"uvicorn {metadata.version('uvicorn')} (pyproject.toml pins uvicorn=="
        f"{PINS.get('uvicorn')}) moved what {USERS} build on: {what}. Re-read those modules "
        "against the new release (and re-run bench.webhook) before moving the pin."
    )


def test_the_stack_is_pinned_exactly_and_installed_as_pinned() -> None:
    image = (ROOT / "docker" / "requirements-webhook.txt").read_text()
    for dist in STACK:
        assert dist in PINS, f"pyproject.toml must pin {dist} exactly ({dist}==X): {USERS}"
        installed = metadata.version(dist)
        assert installed == PINS[dist], (
            f"{dist} {installed} is installed, but pyproject.toml pins {dist}=={PINS[dist]}"
        )
        assert re.search(rf"^{re.escape(dist)}=={re.escape(PINS[dist])} \\$", image, re.M), (
            f"docker/requirements-webhook.txt must pin {dist}=={PINS[dist]} as pyproject.toml does"
        )


def moved_methods() -> list[str]:
    """What moved among the methods we override or call ([] when nothing did)."""
    out = []
    for name, params in METHODS.items():
        fn = getattr(HttpToolsProtocol, name, None)
        if fn is None:
            out.append(f"HttpToolsProtocol.{name} is gone")
        elif (got := list(inspect.signature(fn).parameters)) != params:
            out.append(f"HttpToolsProtocol.{name}{tuple(got)}, not {tuple(params)}")
    return out


def test_the_protocol_methods_we_override_are_still_there() -> None:
    assert not (moved := moved_methods()), _moved("; ".join(moved))


def test_a_moved_method_fails_naming_the_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(HttpToolsProtocol, "on_headers_complete")
    message = _moved("; ".join(moved_methods()))
    assert "HttpToolsProtocol.on_headers_complete is gone" in message
    assert f"pyproject.toml pins uvicorn=={PINS['uvicorn']}" in message


def test_the_protocol_attributes_we_read_are_still_there() -> None:
    """``loop`` and ``transport`` (timing, writes), ``headers`` (the header count guard)
    and ``pipeline`` (the pipelining guard), as they are once a request's head is in."""
    head = b"POST /validate/batch/v1/job HTTP/1.1\r\nhost: w\r\ncontent-length: 9\r\n\r\n"

    async def scenario() -> dict[str, Any]:
        app = create_app(AppState(settings=settings()))
        config = uvicorn.Config(app, http=HttpToolsProtocol, ws="none", log_config=None)
        config.load()
        assert config.http_protocol_class is HttpToolsProtocol, _moved("Config(http=<class>)")
        proto = HttpToolsProtocol(config, ServerState(), {}, _loop=asyncio.get_running_loop())
        inner = FakeTransport()
        proto.connection_made(inner)
        proto.data_received(head)
        seen = {n: getattr(proto, n, None) for n in ("loop", "transport", "headers", "pipeline")}
        proto.connection_lost(None)
        return seen

    seen = asyncio.run(scenario())
    assert isinstance(seen["loop"], asyncio.AbstractEventLoop), _moved("self.loop")
    assert isinstance(seen["transport"], FakeTransport), _moved("self.transport")
    headers = seen["headers"]
    assert isinstance(headers, list), _moved("self.headers (a list of the request's headers)")
    assert (b"host", b"w") in headers, _moved(f"self.headers holds {headers!r}")
    assert hasattr(seen["pipeline"], "__len__"), _moved("self.pipeline (the queued cycles)")


def test_uvloops_tls_protocol_takes_the_replayed_client_hello() -> None:
    """The gate replays the first bytes into the protocol that start_tls installs."""
    tls = getattr(uvloop.loop, "SSLProtocol", None)  # Cython: not in uvloop's stubs
    buffered = hasattr(tls, "get_buffer") and hasattr(tls, "buffer_updated")
    assert buffered or hasattr(tls, "data_received"), (
        f"uvloop {metadata.version('uvloop')} (pyproject.toml pins uvloop=={PINS.get('uvloop')}):"
        " its SSLProtocol takes bytes neither as a BufferedProtocol nor by data_received;"
        " atomic_gang_webhook.gate._replay feeds it the ClientHello that way"
    )

"""The connection gate in process, on both event loops the webhook can run on: TLS by
start_tls (no byte of the ClientHello lost under uvloop, no request before
connection_made under asyncio), the limit, the handshake deadline, the slot count."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import trustme
import uvicorn
import uvloop

from atomic_gang_webhook.app import AppState, create_app
from atomic_gang_webhook.gate import ConnectionGate, protocol_class
from atomic_gang_webhook.guards import CloseReason, ConnectionLimits
from tests.support.jobs import gang_job, settings
from tests.support.reviews import body

CA = trustme.CA()
LEAF = CA.issue_cert("127.0.0.1")
Scenario = Callable[[int, ConnectionGate, ssl.SSLContext], Coroutine[Any, Any, None]]


def _serve(scenario: Scenario, *, loop: str, **limits: Any) -> list[CloseReason]:
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    LEAF.configure_cert(server_ctx)
    client_ctx = ssl.create_default_context()
    CA.configure_trust(client_ctx)
    closed: list[CloseReason] = []
    gate = ConnectionGate(ConnectionLimits(**limits), server_ctx, on_close=closed.append)

    async def main() -> None:
        config = uvicorn.Config(create_app(AppState(settings=settings())), log_config=None)
        config.load()
        state = uvicorn.server.ServerState()
        cls = protocol_class(gate)
        running = asyncio.get_running_loop()

        def factory() -> asyncio.Protocol:
            return cls(config=config, server_state=state, app_state={}, _loop=running)

        server = await running.create_server(factory, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            await scenario(port, gate, client_ctx)
        finally:
            server.close()

    runner = uvloop.run if loop == "uvloop" else asyncio.run
    runner(main())
    return closed


async def _review(port: int, ctx: ssl.SSLContext) -> bytes:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=ctx, server_hostname="127.0.0.1"
    )
    payload = body(gang_job())
    writer.write(
        b"POST /validate/batch/v1/job HTTP/1.1\r\nhost: w\r\ncontent-length: %d\r\n\r\n"
        % len(payload)
        + payload
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    writer.close()
    return head


LOOPS = pytest.mark.parametrize("loop", ["uvloop", "asyncio"])


@LOOPS
def test_reviews_are_served_over_the_gate(loop: str) -> None:
    async def scenario(port: int, gate: ConnectionGate, ctx: ssl.SSLContext) -> None:
        for _ in range(20):
            assert (await _review(port, ctx)).startswith(b"HTTP/1.1 200 OK")
        for _ in range(100):  # every slot is given back once the clients are gone
            if gate.open == 0:
                break
            await asyncio.sleep(0.01)
        assert gate.open == 0

    assert _serve(scenario, loop=loop) == []


@LOOPS
def test_the_limit_refuses_before_any_tls_and_frees_its_slots(loop: str) -> None:
    async def scenario(port: int, gate: ConnectionGate, ctx: ssl.SSLContext) -> None:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        over_reader, _ = held[2]
        assert await asyncio.wait_for(over_reader.read(), 5) == b""  # refused: EOF at once
        assert gate.open == 2
        for _, writer in held:
            writer.close()
        for _ in range(200):
            if gate.open == 0:
                break
            await asyncio.sleep(0.01)
        assert (await _review(port, ctx)).startswith(b"HTTP/1.1 200 OK")

    closed = _serve(scenario, loop=loop, max_connections=2)
    assert closed.count("refused") == 1


@LOOPS
def test_a_silent_client_is_cut_at_the_handshake_deadline(loop: str) -> None:
    async def scenario(port: int, gate: ConnectionGate, ctx: ssl.SSLContext) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        for _ in range(100):
            if gate.open == 0:
                break
            await asyncio.sleep(0.01)
        assert gate.open == 0

    assert "handshake" in _serve(scenario, loop=loop, handshake_timeout=0.2)

"""CoalescingTransport: one write per loop step, in order, nothing lost on close;
and uvicorn's protocol over it answers a review with a single write."""

from __future__ import annotations

import asyncio

import orjson
import uvicorn
from uvicorn.server import ServerState

from atomic_gang_webhook.app import AppState, create_app
from atomic_gang_webhook.transport import CoalescingHttpToolsProtocol, CoalescingTransport
from tests.support.jobs import gang_job, settings
from tests.support.reviews import body
from tests.support.transports import FakeTransport


async def _next_step() -> None:
    await asyncio.sleep(0)  # yields one loop step: the scheduled flush runs
    await asyncio.sleep(0)


def test_writes_of_one_step_reach_the_socket_as_one() -> None:
    async def scenario() -> FakeTransport:
        inner = FakeTransport()
        t = CoalescingTransport(inner, asyncio.get_running_loop())
        t.write(b"HTTP/1.1 200 OK\r\n\r\n")
        t.writelines([b"{", bytearray(b'"a"'), memoryview(b":1}")])
        t.write(b"")
        assert inner.writes == []  # nothing until the step ends
        assert t.get_write_buffer_size() == len(b'HTTP/1.1 200 OK\r\n\r\n{"a":1}')
        await _next_step()
        t.write(b"next")
        await _next_step()
        return inner

    inner = asyncio.run(scenario())
    assert inner.writes == [b'HTTP/1.1 200 OK\r\n\r\n{"a":1}', b"next"]


def test_close_flushes_first_and_abort_discards() -> None:
    async def scenario() -> tuple[FakeTransport, FakeTransport]:
        loop = asyncio.get_running_loop()
        closed, aborted = FakeTransport(), FakeTransport()
        a, b = CoalescingTransport(closed, loop), CoalescingTransport(aborted, loop)
        a.write(b"last words")
        a.close()
        b.write(b"never sent")
        b.abort()
        await _next_step()
        a.write(b"after close")  # dropped, as asyncio drops writes after close()
        await _next_step()
        return closed, aborted

    closed, aborted = asyncio.run(scenario())
    assert closed.events == ["write", "close"]
    assert closed.writes == [b"last words"]
    assert aborted.events == ["abort"]


def test_flow_control_and_info_are_delegated() -> None:
    async def scenario() -> None:
        inner = FakeTransport()
        t = CoalescingTransport(inner, asyncio.get_running_loop())
        t.pause_reading()
        assert not t.is_reading()
        t.resume_reading()
        assert t.is_reading()
        assert t.get_extra_info("peername") == ("10.0.0.1", 443)
        assert t.get_extra_info("sslcontext", "none") == "none"
        assert not t.is_closing()

    asyncio.run(scenario())


def test_uvicorn_answers_a_review_in_one_write() -> None:
    """The protocol uvicorn runs for us sends the head and the body together."""
    payload = body(gang_job())
    request = (
        b"POST /validate/batch/v1/job HTTP/1.1\r\nhost: webhook\r\n"
        b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(payload)
    ) + payload

    async def scenario() -> FakeTransport:
        app = create_app(AppState(settings=settings()))
        config = uvicorn.Config(app, http=CoalescingHttpToolsProtocol, ws="none", log_config=None)
        config.load()
        loop = asyncio.get_running_loop()
        proto = CoalescingHttpToolsProtocol(config, ServerState(), {}, _loop=loop)
        inner = FakeTransport()
        proto.connection_made(inner)
        proto.data_received(request)
        for _ in range(50):
            if inner.writes:
                break
            await asyncio.sleep(0)
        proto.connection_lost(None)
        return inner

    inner = asyncio.run(scenario())
    assert len(inner.writes) == 1, inner.writes
    head, _, reply = inner.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert orjson.loads(reply)["response"]["allowed"] is True

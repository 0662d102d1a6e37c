"""GuardedHttpProtocol's header-size cap: a head still unfinished past the cap is refused
however the client's bytes fall into reads, from the first read on; a body is never
counted as head, and each request on a connection counts from its own start."""

from __future__ import annotations

import asyncio

import uvicorn
from uvicorn.server import ServerState

from atomic_gang_webhook.app import AppState, create_app
from atomic_gang_webhook.guards import CloseReason, ConnectionLimits, GuardedHttpProtocol
from tests.support.jobs import gang_job, settings
from tests.support.reviews import body
from tests.support.transports import FakeTransport

CAP = ConnectionLimits().max_header_bytes
OPEN_HEAD = b"POST / HTTP/1.1\r\nhost: x\r\nx-pad: "  # a header value still going


def _review(pad: int = 0) -> bytes:
    payload = body(gang_job())
    return (
        b"POST /validate/batch/v1/job HTTP/1.1\r\nhost: webhook\r\n"
        b"x-pad: %s\r\ncontent-length: %d\r\n\r\n" % (b"a" * pad, len(payload))
    ) + payload


def _feed(*reads: bytes, replies: int = 1) -> tuple[list[bytes], list[CloseReason]]:
    """Feed each read with one data_received, after the replies to the reads before it
    are out (as a client that waits for its answer does); what was written and why the
    connection was closed."""

    async def scenario() -> tuple[list[bytes], list[CloseReason]]:
        config = uvicorn.Config(create_app(AppState(settings=settings())), log_config=None)
        config.load()
        loop = asyncio.get_running_loop()
        proto = GuardedHttpProtocol(config, ServerState(), {}, _loop=loop)
        closed: list[CloseReason] = []
        proto.on_close = closed.append
        inner = FakeTransport()
        proto.connection_made(inner)
        for i, data in enumerate(reads):
            proto.data_received(data)
            await _steps_until(inner, min(i + 1, replies))
        proto.connection_lost(None)
        return inner.writes, closed

    return asyncio.run(scenario())


async def _steps_until(inner: FakeTransport, writes: int) -> None:
    for _ in range(200):  # loop steps, not time: the app answers within a few
        if len(inner.writes) >= writes:
            return
        await asyncio.sleep(0)


def _statuses(writes: list[bytes]) -> list[int]:
    return [int(w.split(b" ", 2)[1]) for w in writes]


def test_a_head_past_the_cap_in_the_first_read_is_refused() -> None:
    # The request line and the whole head in one read: the count once restarted at the
    # request's first byte, inside that read, and missed it all.
    writes, closed = _feed(OPEN_HEAD + b"a" * (CAP + 1))
    assert _statuses(writes) == [431]
    assert closed == ["headers_too_large"]


def test_a_head_is_refused_in_the_read_that_crosses_the_cap() -> None:
    pad = b"a" * (CAP // 4)
    under = [OPEN_HEAD, pad, pad, pad, pad[: CAP // 4 - len(OPEN_HEAD)]]  # exactly the cap
    _, closed = _feed(*under, replies=0)
    assert closed == []
    writes, closed = _feed(*under, b"a")
    assert _statuses(writes) == [431]
    assert closed == ["headers_too_large"]


def test_a_body_larger_than_the_cap_is_not_a_head() -> None:
    head = b"POST /validate/batch/v1/job HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n"
    writes, closed = _feed(head % (3 * CAP), b" " * (3 * CAP))
    assert _statuses(writes) == [400]  # not JSON, but a review's answer, not the cap's
    assert closed == []


def test_each_request_on_a_connection_has_its_own_cap() -> None:
    # Two heads of 0.6 caps each, in one read: together past the cap, each under it.
    pair = _review(pad=CAP * 6 // 10) * 2
    writes, closed = _feed(pair, replies=2)
    assert _statuses(writes) == [200, 200]
    assert closed == []
    writes, closed = _feed(_review(), OPEN_HEAD + b"a" * (CAP + 1), replies=2)
    assert _statuses(writes) == [200, 431]
    assert closed == ["headers_too_large"]

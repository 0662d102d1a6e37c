"""Per-connection guards of the HTTP protocol: header size and count caps, deadlines for
a request's head and body, and for writes that make no progress.

httptools has no header limit and buffers a header value until it ends, and uvicorn
arms no timer before a connection's first request, none while a body trickles in and
none while a reply waits on a client that never reads. Each of those let one client
hold hundreds of MB. Bytes fed to the parser while a request's head is incomplete are
counted; past the cap the client gets a 431 and the connection is closed, so at most
the cap plus one read is ever buffered. Deadlines are plain timestamps checked by one
:class:`Sweeper` per server every ``tick``: a timer per request cost ~5 us and
``asyncio.timeout`` ~15 us of the ~200 us a review takes. Keep-alive idleness between
requests stays uvicorn's (``timeout_keep_alive``). A connection that pipelines more
than ``max_pipelined`` requests is dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from atomic_gang_webhook.transport import CoalescingHttpToolsProtocol

CloseReason = Literal[
    "refused",
    "handshake",
    "header_timeout",
    "headers_too_large",
    "body_timeout",
    "write_timeout",
    "pipelined",
]
CLOSE_REASONS: tuple[CloseReason, ...] = CloseReason.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    max_connections: int = 512
    handshake_timeout: float = 5.0
    header_timeout: float = 10.0
    body_timeout: float = 10.0
    write_timeout: float = 10.0
    max_header_bytes: int = 64 * 1024
    max_headers: int = 100
    # Requests queued behind the one in progress. Go's client (the API server) never
    # pipelines; a client that queues hundreds without reading held ~100 MB a connection.
    max_pipelined: int = 8

    @property
    def tick(self) -> float:
        """How often deadlines are checked: a quarter of the shortest, 0.05-1 s."""
        shortest = min(self.header_timeout, self.body_timeout, self.write_timeout)
        return max(0.05, min(1.0, shortest / 4))


class Deadlined(Protocol):
    loop: asyncio.AbstractEventLoop

    def check(self, now: float) -> None: ...


@dataclass(eq=False)
class Sweeper:
    """Checks the deadlines of every live connection every ``tick`` seconds."""

    tick: float
    live: set[Deadlined] = field(default_factory=set)
    _handle: asyncio.TimerHandle | None = None

    def add(self, proto: Deadlined) -> None:
        self.live.add(proto)
        if self._handle is None:
            self._handle = proto.loop.call_later(self.tick, self._sweep, proto.loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for proto in list(self.live):
            proto.check(now)
        self._handle = loop.call_later(self.tick, self._sweep, loop) if self.live else None


def _reply(status: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


_TOO_LARGE = _reply(b"431 Request Header Fields Too Large")
_TIMEOUT = _reply(b"408 Request Timeout")


class GuardedHttpProtocol(CoalescingHttpToolsProtocol):
    """uvicorn's httptools protocol, write-coalescing, with the guards above."""

    limits: ConnectionLimits = ConnectionLimits()
    sweeper: Sweeper | None = None  # set on the subclass gate.protocol_class builds
    on_close: Callable[[CloseReason], None] = staticmethod(lambda _reason: None)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._in_head, self._done = True, False
        self._deadline: float | None = self.loop.time() + self.limits.header_timeout
        self._stalled_at: float | None = None
        if self.sweeper is not None:
            self.sweeper.add(self)

    def check(self, now: float) -> None:
        """Called by the sweeper: enforce whichever deadline has passed."""
        if self._stalled_at is not None and now - self._stalled_at > self.limits.write_timeout:
            # The client has read nothing for write_timeout: drop it and its queued replies.
            self._finish("write_timeout")
            self.transport.abort()
        elif self._deadline is not None and now > self._deadline and not self._done:
            self._refuse(_TIMEOUT, "header_timeout" if self._in_head else "body_timeout")

    def _finish(self, reason: CloseReason) -> None:
        self._done = True
        self._deadline = self._stalled_at = None
        self.on_close(reason)

    def _refuse(self, reply: bytes, reason: CloseReason) -> None:
        self._finish(reason)
        if not self.transport.is_closing():
            self.transport.write(reply)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._done:
            return
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and not self._done and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(_TOO_LARGE, "headers_too_large")

    def on_message_begin(self) -> None:
        # The count is not reset here: this runs inside data_received, after the whole
        # read (the request line and maybe the 64 KiB past the cap with it) was counted.
        # _in_head is already True (connection_made, on_message_complete).
        self._deadline = self.loop.time() + self.limits.header_timeout
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._done:
            return
        # uvicorn keeps every header in self.headers; max_header_bytes bounds the list.
        if len(self.headers) > self.limits.max_headers:
            self._refuse(_TOO_LARGE, "headers_too_large")
            return
        if len(self.pipeline) >= self.limits.max_pipelined:
            # Replies go out in order, so there is no way to refuse just this one.
            self._finish("pipelined")
            self.transport.abort()
            return
        self._deadline = self.loop.time() + self.limits.body_timeout
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        # The next request's head counts from here; the rest of this read is not counted
        # (so a pipelined head may buffer the cap plus one read).
        self._in_head, self._head_bytes = True, 0
        self._deadline = None
        if not self._done:
            super().on_message_complete()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stalled_at is None:
            self._stalled_at = self.loop.time()

    def resume_writing(self) -> None:
        self._stalled_at = None
        super().resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._done = True
        if self.sweeper is not None:
            self.sweeper.live.discard(self)
        super().connection_lost(exc)

"""Per-connection guards of the HTTP protocol: header size and count caps, a deadline
for the headers, and a deadline for writes that make no progress (issue 13).

httptools has no header limit and buffers a header value until it ends, and uvicorn
arms no timer before a connection's first request and none while a reply waits on a
client that never reads. Each of those let one client hold hundreds of MB. Bytes fed
to the parser while a request's head is incomplete are counted; past the cap the
client gets a 431 and the connection is closed, so at most the cap plus one read is
ever buffered. Keep-alive idleness between requests stays uvicorn's
(``timeout_keep_alive``); the body's deadline is the endpoint's (``admission``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from atomic_gang_webhook.transport import CoalescingHttpToolsProtocol

CloseReason = Literal[
    "refused", "handshake", "header_timeout", "headers_too_large", "body_timeout", "write_timeout"
]
CLOSE_REASONS: tuple[CloseReason, ...] = CloseReason.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    max_connections: int = 512
    handshake_timeout: float = 5.0
    header_timeout: float = 10.0
    write_timeout: float = 10.0
    max_header_bytes: int = 64 * 1024
    max_headers: int = 100


def _reply(status: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


_TOO_LARGE = _reply(b"431 Request Header Fields Too Large")
_TIMEOUT = _reply(b"408 Request Timeout")


class GuardedHttpProtocol(CoalescingHttpToolsProtocol):
    """uvicorn's httptools protocol, write-coalescing, with the guards above."""

    limits: ConnectionLimits = ConnectionLimits()
    on_close: Callable[[CloseReason], None] = staticmethod(lambda _reason: None)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._headers = 0
        self._in_head = True
        self._done = False
        self._head_timer: asyncio.TimerHandle | None = None
        self._write_timer: asyncio.TimerHandle | None = None
        self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_expired)

    def _head_expired(self) -> None:
        self._head_timer = None
        if self._in_head and not self._done:
            self._refuse(_TIMEOUT, "header_timeout")

    def _refuse(self, reply: bytes, reason: CloseReason) -> None:
        self._done = True
        self.on_close(reason)
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
        self._in_head, self._head_bytes, self._headers = True, 0, 0
        self._arm_head_timer()
        super().on_message_begin()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers += 1
        if self._headers <= self.limits.max_headers:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        if self._done:
            return
        if self._headers > self.limits.max_headers:
            self._refuse(_TOO_LARGE, "headers_too_large")
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._done:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._done:
            super().on_message_complete()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self.limits.write_timeout, self._stalled)

    def resume_writing(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        super().resume_writing()

    def _stalled(self) -> None:
        # The client has read nothing for write_timeout: drop it and what it left queued.
        self._write_timer = None
        self._done = True
        self.on_close("write_timeout")
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        self._done = True
        super().connection_lost(exc)

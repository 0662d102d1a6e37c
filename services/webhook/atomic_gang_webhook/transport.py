"""Write coalescing for uvicorn's HTTP protocol: one TLS record and one send() per
response instead of two.

uvicorn writes a response's head (status line and headers) and its body with two
``transport.write`` calls, and uvloop's TLS transport encrypts and sends each at
once. :class:`CoalescingTransport` buffers the writes of one event-loop step and
sends them as one, like TCP_CORK at the application level: less server CPU and a
shorter tail a review, measured side by side with the same server without it
(docs/benchmarks.md#what-shaped-the-webhook).

It subclasses uvicorn's internal ``HttpToolsProtocol`` (as guards.py builds on this
class), so uvicorn, httptools and uvloop are pinned exactly in pyproject.toml;
tests/unit/webhook/test_pins.py fails, naming the pin and what moved, when a new
release changes the methods and attributes used here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CoalescingTransport(asyncio.Transport):
    """Delegates to ``inner``; writes are joined and flushed once per loop step."""

    def __init__(self, inner: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._inner = inner
        self._loop = loop
        self._pending: list[bytes | bytearray | memoryview] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            # Ordering: everything written in this step goes out, in order, before
            # anything written in a later one; close() flushes first.
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def _flush(self) -> None:
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        if not self._inner.is_closing():  # asyncio drops writes after close() too
            self._inner.write(data)

    def close(self) -> None:
        self._flush()
        self._inner.close()

    def abort(self) -> None:
        self._pending.clear()
        self._inner.abort()

    def write_eof(self) -> None:
        self._flush()
        self._inner.write_eof()

    def can_write_eof(self) -> bool:
        return self._inner.can_write_eof()

    def is_closing(self) -> bool:
        return self._inner.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._inner.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._inner.pause_reading()

    def resume_reading(self) -> None:
        self._inner.resume_reading()

    def is_reading(self) -> bool:
        return self._inner.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._inner.get_protocol()

    def get_write_buffer_size(self) -> int:
        return self._inner.get_write_buffer_size() + sum(len(d) for d in self._pending)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._inner.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._inner.set_write_buffer_limits(high, low)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a :class:`CoalescingTransport`
    (``uvicorn.Config(http=...)`` takes a protocol class)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))

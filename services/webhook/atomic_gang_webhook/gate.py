"""The connection gate: a connection limit and a TLS handshake deadline in front of
uvicorn's HTTP protocol (issue 13).

uvicorn hands the SSLContext to ``loop.create_server``, which counts no connections
and allows 60 s for a handshake: 3,000 half-open TLS connections held 270 MB. Here the
server listens on plain TCP and :class:`TlsGate` is its protocol. A connection past
``max_connections`` is aborted before any TLS work; the others are upgraded with
``loop.start_tls`` under ``handshake_timeout`` and then handed to the HTTP protocol.
The slot is held from accept to close, handshake included.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from atomic_gang_webhook.guards import CloseReason, ConnectionLimits, GuardedHttpProtocol, Sweeper


@dataclass(eq=False)
class ConnectionGate:
    """Open connections, counted from accept to close; single-threaded (the loop's)."""

    limits: ConnectionLimits
    ssl_context: ssl.SSLContext
    on_close: Callable[[CloseReason], None] = field(default=lambda _reason: None)
    open: int = 0

    def enter(self) -> bool:
        if self.open >= self.limits.max_connections:
            self.on_close("refused")
            return False
        self.open += 1
        return True

    def leave(self) -> None:
        self.open -= 1


class _AppSide(asyncio.Protocol):
    """The application side of the TLS transport until the HTTP protocol is attached.

    The TLS layer may decrypt the first request in the same step as the handshake's
    end, before ``start_tls`` returns: that data is kept and replayed in order."""

    def __init__(self, http: GuardedHttpProtocol, release: Callable[[], None]) -> None:
        self.http = http
        self._release = release
        self._early: list[bytes] = []
        self._attached = False

    def attach(self, transport: asyncio.Transport) -> None:
        self.http.connection_made(transport)
        self._attached = True
        early, self._early = self._early, []
        for data in early:
            self.http.data_received(data)

    def data_received(self, data: bytes) -> None:
        if self._attached:
            self.http.data_received(data)
        else:
            self._early.append(data)

    def eof_received(self) -> None:
        if self._attached:
            self.http.eof_received()

    def pause_writing(self) -> None:
        if self._attached:
            self.http.pause_writing()

    def resume_writing(self) -> None:
        if self._attached:
            self.http.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        if self._attached:
            self.http.connection_lost(exc)


_UPGRADES: set[asyncio.Task[None]] = set()  # strong references: the loop keeps weak ones


class TlsGate(asyncio.Protocol):
    """The listening socket's protocol; see the module docstring."""

    gate: ConnectionGate  # both set on the subclass that :func:`protocol_class` builds
    http_class: type[GuardedHttpProtocol] = GuardedHttpProtocol

    def __init__(self, **http_kwargs: Any) -> None:
        self._http_kwargs = http_kwargs
        self._released = False
        self._transport: asyncio.Transport | None = None
        self._hello: list[bytes] = []

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not self.gate.enter():
            self._released = True  # nothing to give back
            transport.abort()
            return
        self._transport = transport
        transport.pause_reading()  # asyncio honours this; uvloop reads once regardless
        task = asyncio.get_running_loop().create_task(self._upgrade(transport))
        _UPGRADES.add(task)
        task.add_done_callback(_UPGRADES.discard)

    def data_received(self, data: bytes) -> None:
        # Bytes read before start_tls took over (the ClientHello, under uvloop): kept
        # for the TLS layer, and nothing more is read until it is in place.
        self._hello.append(data)
        if self._transport is not None:
            self._transport.pause_reading()

    def _replay(self, transport: asyncio.Transport) -> None:
        # Runs after start_tls installed its protocol and before the TLS layer's own
        # connection_made and resume_reading: the bytes land in its incoming buffer
        # first, in order, and the handshake starts from them.
        tls_side: Any = transport.get_protocol()
        for data in self._hello:
            if hasattr(tls_side, "buffer_updated"):  # uvloop's is not a BufferedProtocol
                _feed_buffered(tls_side, data)
            else:
                tls_side.data_received(data)
        self._hello = []

    def _release(self) -> None:
        if not self._released:
            self._released = True
            self.gate.leave()

    async def _upgrade(self, transport: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        side = _AppSide(self.http_class(**self._http_kwargs), self._release)
        loop.call_soon(self._replay, transport)  # queued ahead of start_tls's callbacks
        try:
            tls = await loop.start_tls(
                transport,
                side,
                self.gate.ssl_context,
                server_side=True,
                ssl_handshake_timeout=self.gate.limits.handshake_timeout,
            )
        except Exception:  # timeout, bad ClientHello, reset: all end the same way
            self.gate.on_close("handshake")
            self._release()
            transport.abort()
            return
        if tls is None:  # pragma: no cover - start_tls returns None only on a closed loop
            self._release()
            return
        side.attach(tls)

    def connection_lost(self, exc: Exception | None) -> None:
        # Only before start_tls took the transport over (the client left first).
        self._release()


def _feed_buffered(protocol: Any, data: bytes) -> None:
    view = memoryview(data)
    while view:
        buf = memoryview(protocol.get_buffer(len(view)))
        n = min(len(buf), len(view))
        buf[:n] = view[:n]
        protocol.buffer_updated(n)
        view = view[n:]


def protocol_class(gate: ConnectionGate) -> type[TlsGate]:
    """The protocol class for ``uvicorn.Config(http=...)``, bound to ``gate``."""
    http = type(
        "BoundGuardedHttpProtocol",
        (GuardedHttpProtocol,),
        {
            "limits": gate.limits,
            "sweeper": Sweeper(gate.limits.tick),
            "on_close": staticmethod(gate.on_close),
        },
    )
    return type("BoundTlsGate", (TlsGate,), {"gate": gate, "http_class": http})

"""The connection gate: a connection limit and a TLS handshake deadline in front of
uvicorn's HTTP protocol.

uvicorn hands the SSLContext to ``loop.create_server``, which counts no connections
and allows 60 s for a handshake: 3,000 half-open TLS connections held 270 MB. Here the
server listens on plain TCP and :class:`TlsGate` is its protocol. A connection past
``max_connections`` is aborted before any TLS work; the others are upgraded with
``loop.start_tls`` under ``handshake_timeout`` and then handed to the HTTP protocol.
The slot is held from accept to close, handshake included. No TLS work starts until
the client's first bytes arrive, so a silent connection holds only its transport (the
handshake deadline runs from accept, checked by the server's sweeper).
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
    sweeper: Sweeper = field(init=False)

    def __post_init__(self) -> None:
        self.sweeper = Sweeper(self.limits.tick)

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

    def __init__(
        self, make_http: Callable[[], GuardedHttpProtocol], release: Callable[[], None]
    ) -> None:
        self._make_http = make_http
        self.http: GuardedHttpProtocol | None = None
        self._release = release
        self._early: list[bytes] = []

    def attach(self, transport: asyncio.Transport) -> None:
        # Built only now: a connection that never finishes its handshake costs no parser.
        self.http = self._make_http()
        self.http.connection_made(transport)
        early, self._early = self._early, []
        for data in early:
            self.http.data_received(data)

    def data_received(self, data: bytes) -> None:
        if self.http is not None:
            self.http.data_received(data)
        else:
            self._early.append(data)

    def eof_received(self) -> None:
        if self.http is not None:
            self.http.eof_received()

    def pause_writing(self) -> None:
        if self.http is not None:
            self.http.pause_writing()

    def resume_writing(self) -> None:
        if self.http is not None:
            self.http.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        if self.http is not None:
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
        self._deadline = 0.0
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not self.gate.enter():
            self._released = True  # nothing to give back
            transport.abort()
            return
        # No TLS work until the client speaks: a silent connection costs a transport.
        self._transport = transport
        self._deadline = self.loop.time() + self.gate.limits.handshake_timeout
        self.gate.sweeper.add(self)

    def check(self, now: float) -> None:
        """Called by the sweeper while no ClientHello has arrived."""
        if now > self._deadline and self._transport is not None:
            self.gate.sweeper.live.discard(self)
            self.gate.on_close("handshake")
            self._transport.abort()

    def data_received(self, data: bytes) -> None:
        # The ClientHello (its first part): kept for the TLS layer, and nothing more is
        # read until that layer is in place.
        assert self._transport is not None
        self._hello.append(data)
        self._transport.pause_reading()
        if len(self._hello) == 1:
            self.gate.sweeper.live.discard(self)
            task = self.loop.create_task(self._upgrade(self._transport))
            _UPGRADES.add(task)
            task.add_done_callback(_UPGRADES.discard)

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
        loop = self.loop
        side = _AppSide(lambda: self.http_class(**self._http_kwargs), self._release)
        loop.call_soon(self._replay, transport)  # queued ahead of start_tls's callbacks
        left = max(0.001, self._deadline - loop.time())
        try:
            tls = await loop.start_tls(
                transport, side, self.gate.ssl_context, server_side=True, ssl_handshake_timeout=left
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
        self.gate.sweeper.live.discard(self)
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
        {"limits": gate.limits, "sweeper": gate.sweeper, "on_close": staticmethod(gate.on_close)},
    )
    return type("BoundTlsGate", (TlsGate,), {"gate": gate, "http_class": http})

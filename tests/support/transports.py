"""An asyncio transport that records what a protocol writes, for protocol unit tests."""

from __future__ import annotations

import asyncio
from typing import Any


class FakeTransport(asyncio.Transport):
    """Records what reaches the socket side."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.events: list[str] = []
        self.closing = False
        self.reading = True

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))
        self.events.append("write")

    def close(self) -> None:
        self.closing = True
        self.events.append("close")

    def abort(self) -> None:
        self.closing = True
        self.events.append("abort")

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("10.0.0.1", 443)}.get(name, default)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.events.append("set_protocol")

    def get_write_buffer_size(self) -> int:
        return 0

    def is_reading(self) -> bool:
        return self.reading

"""Raw sockets for hostile-client tests: what httpx will not send (slow headers, huge
headers, lies in Content-Length, pipelining without reading)."""

from __future__ import annotations

import json
import socket
import ssl
import time
from typing import Any

PATH = "/validate/batch/v1/job"


def tcp(port: int, *, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket()
    if rcvbuf is not None:  # before connect, so the window never grows
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    return sock


def tls(port: int, ctx: ssl.SSLContext, *, rcvbuf: int | None = None) -> ssl.SSLSocket:
    sock = tcp(port, rcvbuf=rcvbuf)
    sock.settimeout(10)
    return ctx.wrap_socket(sock, server_hostname="127.0.0.1")


def request(doc: Any, *, extra: str = "") -> bytes:
    body = json.dumps(doc).encode()
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    )
    return head.encode() + body


def closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Read until the peer closes (True) or ``seconds`` pass (False); what was read."""
    deadline = time.monotonic() + seconds
    got = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False, got
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return False, got
        except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
            return True, got
        if not chunk:
            return True, got
        got += chunk


def status_of(reply: bytes) -> int:
    """The status code of the first response in ``reply`` (0 when there is none)."""
    line = reply.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 and line[0].startswith(b"HTTP/") else 0

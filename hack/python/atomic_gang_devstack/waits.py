"""Waiting on conditions with deadlines, and the HTTP probes components use.

Nothing here sleeps "long enough": every wait polls a real condition until a
deadline and then fails with what it was waiting for and where the log is.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from atomic_gang_devstack import procs

POLL = 0.1


class AbortedError(RuntimeError):
    """Another component failed, so this one stopped waiting."""


class ComponentFailedError(RuntimeError):
    """A component did not become healthy; the message carries its log path and tail."""

    def __init__(self, name: str, reason: str, log: str | None = None) -> None:
        self.name, self.reason, self.log = name, reason, log
        text = f"{name}: {reason}"
        if log:
            text += f"\n  log: {log}\n  last lines:\n" + _indent(procs.log_tail(log))
        super().__init__(text)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def wait_until(
    check: Callable[[], bool],
    *,
    name: str,
    what: str,
    timeout: float,
    proc: procs.ProcRecord | None = None,
    cancel: threading.Event | None = None,
) -> float:
    """Poll ``check`` until it returns True; return the seconds it took.

    Fails early if ``proc`` exits, and stops when ``cancel`` is set.
    Exceptions from ``check`` count as "not yet".
    """
    start = time.monotonic()
    last_error = ""
    while True:
        try:
            if check():
                return time.monotonic() - start
        except Exception as exc:
            last_error = f" (last error: {type(exc).__name__}: {exc})"
        if proc is not None and not procs.alive(proc):
            code = procs.exit_code(proc)
            raise ComponentFailedError(
                name, f"exited (code {code}) while waiting for {what}", proc.log
            )
        if cancel is not None and cancel.is_set():
            raise AbortedError(f"{name}: gave up waiting for {what}: another component failed")
        if time.monotonic() - start > timeout:
            raise ComponentFailedError(
                name, f"not {what} after {timeout:.0f}s{last_error}", proc.log if proc else None
            )
        time.sleep(POLL)


def tls_context(ca_file: Path, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


def http_ok(url: str, *, verify: ssl.SSLContext | bool = False, expect: str | None = None) -> bool:
    """True when GET ``url`` answers 200 (and the body contains ``expect``)."""
    resp = httpx.get(url, verify=verify, timeout=2.0)
    return resp.status_code == 200 and (expect is None or expect in resp.text)


def tls_handshake_ok(host: str, port: int, ctx: ssl.SSLContext) -> bool:
    """True when a TLS handshake to ``host:port`` verifies against ``ctx``."""
    with (
        socket.create_connection((host, port), timeout=2.0) as raw,
        ctx.wrap_socket(raw, server_hostname=host),
    ):
        return True


def admission_allowed(url: str, review: dict[str, Any], *, verify: ssl.SSLContext | bool) -> bool:
    """True when the webhook at ``url`` answers the AdmissionReview ``review`` with allowed.
    A controller-runtime manager registers its webhook paths after it starts serving;
    until then a path answers 404 (and the apiserver's call fails closed)."""
    resp = httpx.post(url, json=review, verify=verify, timeout=2.0)
    return resp.status_code == 200 and resp.json()["response"]["allowed"] is True

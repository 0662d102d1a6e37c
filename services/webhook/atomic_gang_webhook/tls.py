"""TLS with a certificate pair that is re-read when its files change.

cert-manager rewrites the mounted Secret by swapping a symlink, so the files
change under a running process. Every TLS handshake (through the SNI hook, which
OpenSSL calls with or without a server name) checks the files at most once per
``check_interval`` and switches *new* connections to the new pair. Connections
already open keep the context they were accepted with, so no in-flight request
fails. A half-written pair that does not load keeps the old one in service.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from datetime import UTC
from pathlib import Path

from cryptography import x509

log = logging.getLogger("atomic_gang_webhook.tls")
Stamp = tuple[tuple[int, int, int], tuple[int, int, int]]


def _stamp(path: str) -> tuple[int, int, int]:
    st = os.stat(path)  # follows the ..data symlink swap of Secret volumes
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _context(cert_file: str, key_file: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


def not_after(cert_file: str) -> float:
    cert = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
    return cert.not_valid_after_utc.replace(tzinfo=UTC).timestamp()


class ReloadingCertificate:
    """Owns the live SSLContext; call :meth:`server_context` once for the server."""

    def __init__(
        self,
        cert_file: str,
        key_file: str,
        *,
        check_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        on_reload: Callable[[str], None] | None = None,
    ) -> None:
        self.cert_file, self.key_file = cert_file, key_file
        self._interval, self._clock = check_interval, clock
        self._on_reload = on_reload or (lambda _cert: None)
        self._lock = threading.Lock()
        self._stamp = self._read_stamp()
        self._current = _context(cert_file, key_file)  # fail fast at start-up
        self._next_check = clock() + check_interval
        self.reloads = 0

    def _read_stamp(self) -> Stamp:
        return (_stamp(self.cert_file), _stamp(self.key_file))

    @property
    def current(self) -> ssl.SSLContext:
        return self._current

    def server_context(self) -> ssl.SSLContext:
        outer = _context(self.cert_file, self.key_file)
        outer.sni_callback = self._on_client_hello
        return outer

    def maybe_reload(self) -> bool:
        """Re-read the pair if its files changed; True when a new pair is live."""
        now = self._clock()
        if now < self._next_check:
            return False
        with self._lock:
            self._next_check = now + self._interval
            try:
                stamp = self._read_stamp()
                if stamp == self._stamp:
                    return False
                fresh = _context(self.cert_file, self.key_file)
            except (OSError, ssl.SSLError) as exc:
                # Mid-rotation (files half written): keep serving the old pair.
                log.warning("certificate reload deferred", extra={"error": str(exc)})
                return False
            self._current, self._stamp = fresh, stamp
            self.reloads += 1
        log.info("certificate reloaded", extra={"cert_file": self.cert_file})
        self._on_reload(self.cert_file)
        return True

    def _on_client_hello(
        self, sslobj: ssl.SSLObject, server_name: str | None, ctx: ssl.SSLContext
    ) -> None:
        self.maybe_reload()
        current = self._current
        if ctx is not current:
            sslobj.context = current

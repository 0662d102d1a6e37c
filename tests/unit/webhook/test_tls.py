"""Certificate hot reload, driven by a fake clock (no real waiting)."""

from __future__ import annotations

import ssl
from pathlib import Path

import trustme

from atomic_gang_webhook.tls import ReloadingCertificate
from tests.support.clock import ManualClock
from tests.support.webhook_proc import SecretDir


def _setup(
    tmp_path: Path,
) -> tuple[trustme.CA, SecretDir, ReloadingCertificate, ManualClock, list[str]]:
    ca = trustme.CA()
    secret = SecretDir(tmp_path)
    secret.publish(ca.issue_cert("127.0.0.1"))
    clock = ManualClock(start=0.0)
    seen: list[str] = []
    cert = ReloadingCertificate(
        str(secret.cert), str(secret.key), check_interval=1.0, clock=clock, on_reload=seen.append
    )
    return ca, secret, cert, clock, seen


def test_rotation_is_picked_up_after_the_interval(tmp_path: Path) -> None:
    ca, secret, cert, clock, seen = _setup(tmp_path)
    first = cert.current
    secret.publish(ca.issue_cert("127.0.0.1"))
    assert cert.maybe_reload() is False  # not yet time to look
    clock.advance(1.5)
    assert cert.maybe_reload() is True
    assert cert.current is not first
    assert cert.reloads == 1
    assert seen == [str(secret.cert)]
    clock.advance(1.5)  # at 3.0
    assert cert.maybe_reload() is False  # unchanged files: no reload


def test_half_written_pair_keeps_the_old_one(tmp_path: Path) -> None:
    ca, secret, cert, clock, _ = _setup(tmp_path)
    first = cert.current
    # A non-atomic writer: new certificate, old key -> does not load.
    new = ca.issue_cert("127.0.0.1")
    target = secret.cert.resolve()
    new.cert_chain_pems[0].write_to_path(str(target))
    clock.advance(2.0)
    assert cert.maybe_reload() is False
    assert cert.current is first
    new.private_key_pem.write_to_path(str(secret.key.resolve()))
    clock.advance(2.0)  # at 4.0
    assert cert.maybe_reload() is True
    assert cert.current is not first


def test_garbage_files_keep_serving(tmp_path: Path) -> None:
    _, secret, cert, clock, _ = _setup(tmp_path)
    first = cert.current
    secret.cert.resolve().write_text("not a certificate")
    clock.advance(2.0)
    assert cert.maybe_reload() is False
    assert cert.current is first


def test_contexts_require_tls_1_2(tmp_path: Path) -> None:
    cert = _setup(tmp_path)[2]
    assert cert.server_context().minimum_version == ssl.TLSVersion.TLSv1_2
    assert cert.current.minimum_version == ssl.TLSVersion.TLSv1_2
    assert cert.server_context().sni_callback is not None

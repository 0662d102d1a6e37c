"""Rotating the certificate files under load loses no request and needs no restart."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from cryptography import x509

from tests.support.jobs import gang_job
from tests.support.reviews import body
from tests.support.wait import wait_for
from tests.support.webhook_proc import WebhookProcess

PATH = "/validate/batch/v1/job"


def _served_serial(wh: WebhookProcess) -> int:
    ctx = ssl.create_default_context()
    wh.ca.configure_trust(ctx)
    port = int(wh.url.rsplit(":", 1)[1])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def _hammer(
    wh: WebhookProcess, stop: threading.Event, *, keep_alive: bool, stamps: list[float]
) -> tuple[int, list[str]]:
    ok, errors = 0, []
    payload = body(gang_job())
    client = wh.client(timeout=10)
    try:
        while not stop.is_set():
            if not keep_alive:
                client.close()
                client = wh.client(timeout=10)
            try:
                r = client.post(PATH, content=payload)
                if r.status_code == 200 and r.json()["response"]["allowed"] is True:
                    ok += 1
                    stamps.append(time.monotonic())
                else:
                    errors.append(f"{r.status_code}: {r.text[:200]}")
            except Exception as exc:  # any failure is what we count
                errors.append(repr(exc))
    finally:
        client.close()
    return ok, errors


def test_rotation_under_load_loses_no_request(webhook: WebhookProcess) -> None:
    stop = threading.Event()
    before = _served_serial(webhook)
    stamps: list[float] = []
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [
            pool.submit(_hammer, webhook, stop, keep_alive=i % 2 == 0, stamps=stamps)
            for i in range(6)
        ]
        wait_for(lambda: len(stamps) >= 6, timeout=30, what="load flowing")
        first_rotation = time.monotonic()
        serials = {before}
        for _ in range(3):
            webhook.secret.publish(webhook.ca.issue_cert("127.0.0.1", "localhost"))
            current = wait_for(
                lambda: (s := _served_serial(webhook)) not in serials and s,
                timeout=15,
                what="the new certificate to be served",
            )
            serials.add(current)
        last_rotation = time.monotonic()
        wait_for(
            lambda: sum(t > last_rotation for t in stamps) >= 6,
            timeout=30,
            what="load after the last rotation",
        )
        stop.set()
        results = [f.result(timeout=60) for f in futures]
    total_ok = sum(ok for ok, _ in results)
    errors = [e for _, errs in results for e in errs]
    assert errors == []
    assert total_ok == len(stamps) >= 12
    assert min(stamps) < first_rotation < last_rotation < max(stamps)
    assert len(serials) == 4
    with webhook.client() as client:
        metrics = client.get("/metrics").text
    assert "atomic_gang_webhook_certificate_reloads_total 3.0" in metrics
    assert webhook.proc.poll() is None  # never restarted


def test_tls_1_2_clients_are_served(webhook: WebhookProcess) -> None:
    ctx = ssl.create_default_context()
    webhook.ca.configure_trust(ctx)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2  # must still be served
    port = int(webhook.url.rsplit(":", 1)[1])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() == "TLSv1.2"


def test_plain_http_is_not_served(webhook: WebhookProcess) -> None:
    url = webhook.url.replace("https://", "http://") + "/healthz"
    try:
        status = httpx.get(url, timeout=5).status_code
    except httpx.HTTPError:
        status = 0
    assert status != 200

"""The kubelet's probes are answered within their timeout however many slow clients hold
the controller's ports: the probes have a listener of their own (``serve_probes``, the
chart's ``controller.healthPort``), and on either listener a new connection sheds the
oldest one still sending its request head."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from atomic_gang_provisioner.config import ServerSettings
from atomic_gang_provisioner.httpserver import BoundedServer
from atomic_gang_provisioner.main import listen
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from tests.support.wait import wait_for

PROBE_TIMEOUT = 5.0  # timeoutSeconds of every probe in the chart's controller Deployment
SLOW_CLIENTS = 200


@pytest.fixture
def listeners() -> Iterator[dict[str, BoundedServer]]:
    """Both listeners as the controller starts them (default limits), on free ports."""
    server = ServerSettings(http_host="127.0.0.1", http_port=0, health_port=0)
    up = listen(server, ProvisionerMetrics.create(), ready=lambda: True, access=None)
    yield up
    for srv in up.values():
        srv.shutdown()
        srv.server_close()


def closed_counts(listeners: dict[str, BoundedServer]) -> dict[tuple[str, str], float]:
    """``atomic_gang_http_connections_closed_total`` as the metrics port serves it."""
    port = listeners["http"].server_port
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    (family,) = (
        f
        for f in text_string_to_metric_families(text)
        if f.name == "atomic_gang_http_connections_closed"
    )
    return {
        (s.labels["listener"], s.labels["reason"]): s.value
        for s in family.samples
        if s.name.endswith("_total")
    }


def slow_client(port: int, n: int) -> socket.socket:
    """Connects and sends nothing, or the first byte of a request that never ends."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if n % 2:
        s.sendall(b"G")
    return s


@pytest.mark.parametrize(
    "held",
    [
        pytest.param("http", id="slow-clients-on-the-metrics-port"),
        pytest.param("probes", id="slow-clients-on-the-probe-port"),
    ],
)
def test_probes_answer_within_their_timeout_while_200_slow_clients_hold_a_port(
    listeners: dict[str, BoundedServer], held: str
) -> None:
    target = listeners[held]
    clients = [slow_client(target.server_port, n) for n in range(SLOW_CLIENTS)]
    try:
        wait_for(
            lambda: target.shed == SLOW_CLIENTS - target.limits.connections,
            timeout=10,
            what="the oldest slow clients shed",
        )
        assert len(target.held) == target.limits.connections  # the cap is full of them
        probes = f"http://127.0.0.1:{listeners['probes'].server_port}"
        for path in ("/healthz", "/readyz") * 3:
            started = time.monotonic()
            resp = httpx.get(probes + path, timeout=PROBE_TIMEOUT)
            assert resp.status_code == 200, path
            assert time.monotonic() - started < PROBE_TIMEOUT, path
        counted = closed_counts(listeners)
        assert counted[(held, "shed")] >= SLOW_CLIENTS - target.limits.connections
        assert counted[(held, "refused")] == 0
    finally:
        for s in clients:
            s.close()


def test_the_probe_port_serves_no_metrics(listeners: dict[str, BoundedServer]) -> None:
    probes = f"http://127.0.0.1:{listeners['probes'].server_port}"
    assert httpx.get(probes + "/metrics", timeout=5).status_code == 404

"""The controller's HTTP server (/metrics, /healthz, /readyz) is bounded: parked,
trickling and oversized requests cost a capped number of threads, for a bounded time;
at the cap a new request sheds the oldest connection still sending its head."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from atomic_gang_provisioner.httpserver import BoundedServer, ClosedConnections, Limits, serve
from tests.support.wait import wait_for

LIMITS = Limits(connections=8, read_seconds=3.0, request_seconds=4.0, header_bytes=1024)
HALF_SENT = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"  # no blank line: the request never ends


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def server(registry: CollectorRegistry) -> Iterator[BoundedServer]:
    srv = serve(host="127.0.0.1", port=0, registry=registry, ready=lambda: True, limits=LIMITS)
    yield srv
    srv.shutdown()
    srv.server_close()


def healthy(srv: BoundedServer) -> bool:
    try:
        return (
            httpx.get(f"http://127.0.0.1:{srv.server_port}/healthz", timeout=2).status_code == 200
        )
    except httpx.HTTPError:
        return False


def connect(srv: BoundedServer, first: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", srv.server_port), timeout=5)
    s.sendall(first)
    return s


def closed_by_server(s: socket.socket, *, within: float = 0.05) -> bool:
    """Whether the server closes ``s`` within ``within`` seconds."""
    s.settimeout(within)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_200_parked_requests_hold_at_most_the_cap_of_threads_and_are_cut(
    server: BoundedServer,
) -> None:
    before = threading.active_count()
    parked = [connect(server, HALF_SENT) for _ in range(200)]
    try:
        wait_for(lambda: server.shed >= 200 - LIMITS.connections, timeout=10, what="sheddings")
        # One thread and one deadline timer per held connection, once the shed ones end.
        wait_for(
            lambda: threading.active_count() - before <= 2 * LIMITS.connections,
            timeout=5,
            what="the shed connections' threads gone",
        )
        assert server.refused == 0  # none of them was being answered
        # Each held connection is shut at its request deadline, and the probe answers again.
        wait_for(lambda: all(closed_by_server(s) for s in parked), timeout=10, what="all cut")
        wait_for(lambda: healthy(server), timeout=5, what="/healthz answering again")
    finally:
        for s in parked:
            s.close()
    wait_for(
        lambda: threading.active_count() - before <= 2,
        timeout=10,
        what="the held threads gone",
    )


def test_a_trickling_client_is_cut_at_the_request_deadline(server: BoundedServer) -> None:
    s = connect(server, b"GET /metrics HTTP/1.1\r\n")
    started = time.monotonic()
    try:
        # A header line, then up to 0.3 s for the server to cut us: each read is quick,
        # the request never ends.
        while True:
            assert time.monotonic() - started < LIMITS.request_seconds + 3, "never cut"
            try:
                s.sendall(b"X-A: b\r\n")
            except OSError:
                break
            if closed_by_server(s, within=0.3):
                break
    finally:
        s.close()
    assert time.monotonic() - started >= LIMITS.request_seconds - 0.5


def test_an_oversized_head_is_cut_without_an_answer(
    server: BoundedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    s = connect(server, b"GET /metrics HTTP/1.1\r\n" + b"X-Big: " + b"a" * 4000 + b"\r\n\r\n")
    try:
        wait_for(lambda: closed_by_server(s), timeout=5, what="the connection cut")
    finally:
        s.close()
    assert "Traceback" not in capsys.readouterr().err
    assert healthy(server)


def test_an_ordinary_scrape_is_answered(server: BoundedServer) -> None:
    resp = httpx.get(f"http://127.0.0.1:{server.server_port}/metrics", timeout=5)
    assert resp.status_code == 200
    assert healthy(server)


def test_at_the_cap_a_scrape_sheds_the_oldest_connection_still_sending_its_head(
    server: BoundedServer, registry: CollectorRegistry
) -> None:
    registry.register(ClosedConnections({"http": server}))
    idle = [socket.create_connection(("127.0.0.1", server.server_port), timeout=5)]
    idle += [connect(server, HALF_SENT) for _ in range(LIMITS.connections - 1)]
    try:
        wait_for(lambda: len(server.held) == LIMITS.connections, timeout=5, what="the cap held")

        resp = httpx.get(f"http://127.0.0.1:{server.server_port}/metrics", timeout=5)

        assert resp.status_code == 200
        assert (server.shed, server.refused) == (1, 0)
        shed = {"listener": "http", "reason": "shed"}
        assert registry.get_sample_value("atomic_gang_http_connections_closed_total", shed) == 1
        oldest, *younger = idle
        assert closed_by_server(oldest, within=5)
        assert not any(closed_by_server(s) for s in younger)
    finally:
        for s in idle:
            s.close()


SCRAPE = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


class _Stalled(Collector):
    """Holds every scrape until ``go`` is set; ``entered`` counts the scrapes it holds."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self._lock = threading.Lock()
        self.entered = 0

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            self.entered += 1
        self.go.wait(timeout=10)
        yield GaugeMetricFamily("stalled", "Held until released.", value=1)


def test_at_the_cap_of_connections_being_answered_a_new_one_is_closed_at_accept(
    server: BoundedServer, registry: CollectorRegistry
) -> None:
    stalled = _Stalled()
    registry.register(stalled)
    answering = [connect(server, SCRAPE) for _ in range(LIMITS.connections)]
    try:
        wait_for(lambda: stalled.entered == LIMITS.connections, timeout=5, what="all answering")
        late = connect(server, HALF_SENT)
        try:
            # Nothing to shed: each held one has its answer coming, so the late one goes.
            assert closed_by_server(late, within=5)
            assert (server.shed, server.refused) == (0, 1)
        finally:
            late.close()
        stalled.go.set()
        for s in answering:
            s.settimeout(5)
            assert s.recv(12) == b"HTTP/1.0 200"
    finally:
        stalled.go.set()
        for s in answering:
            s.close()

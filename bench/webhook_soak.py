"""Soak of the webhook under every hostile pattern at once.

One real ``atomic-gang-webhook`` (production defaults: 512 connections, 5 s handshake,
10 s header/body/write deadlines). For ``--seconds`` (default 60), at the same time:
  amplification  20 clients posting dry-run Jobs with 6,000 unknown keys each
  operations     reviews with random 4 KB operation strings (metric labels)
  durations      260 KB valid keep-warm-ttl strings, all distinct (the parse cache)
  headers        endless 16 KB header lines (431)
  half-open      up to 3,000 silent TCP connections, reopened as they are cut
  slow readers   6 clients pipelining requests and never reading the replies
  slowloris      50 connections sending a header byte a second
  oversized      bodies declared 1 GiB (413, then the connection must close)
  malformed      non-reviews as fast as one client can send them (log rate limit)
A separate process sends valid reviews over 2 keep-alive connections opened before
the storm and records each one's latency. ``--attacker-nice 10`` lowers the hostile
process's priority, as if the attackers ran on other nodes (they share 2 cores here).
Prints the server's peak RSS (VmHWM), its CPU, the valid reviews' p50/p99 and errors.
Targets: RSS <= 200 MB, p99 <= 100 ms, 0 errors.

Usage: .venv/bin/python -m bench.webhook_soak [--seconds 60] [--attacker-nice 10]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import select
import socket
import ssl
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from atomic_gang import keys as k
from bench.webhook import cpu_seconds
from tests.support import rawhttp
from tests.support.jobs import gang_job
from tests.support.reviews import review
from tests.support.webhook_proc import run_webhook

PATH = rawhttp.PATH
Target = tuple[int, bytes]  # (port, CA PEM)


def _ctx(ca: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.decode())


def _client(target: Target) -> httpx.Client:
    port, ca = target
    return httpx.Client(base_url=f"https://127.0.0.1:{port}", verify=_ctx(ca), timeout=30)


def _loop(until: float, step: Callable[[], None]) -> None:
    while time.monotonic() < until:
        try:
            step()
        except (OSError, httpx.HTTPError, ssl.SSLError):
            time.sleep(0.01)  # the server cut us: that is its job; go again


def _poster(target: Target, until: float, body: Callable[[], bytes]) -> None:
    with _client(target) as c:

        def once() -> None:
            c.post(PATH, content=body())

        _loop(until, once)


def _unknown_keys() -> bytes:
    job = gang_job()
    job["metadata"]["annotations"].update({f"{k.PREFIX}x{i:05d}": "v" for i in range(6000)})
    return json.dumps(review(job)).encode()


def _random_operation() -> bytes:
    op = "".join(random.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ", k=4096))
    return json.dumps(review(gang_job(), operation=op)).encode()


def _long_duration() -> bytes:
    ttl = "0s" * 130_000 + f"{random.randint(1, 10**9)}ns"
    return json.dumps(review(gang_job(annotations={k.KEEP_WARM_TTL: ttl}))).encode()


def _header_flood(target: Target, until: float) -> None:
    def once() -> None:
        with rawhttp.tls(target[0], _ctx(target[1])) as s:
            s.sendall(b"POST " + PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Pad: ")
            answered = select.poll()  # select() fails on descriptors above 1024
            answered.register(s, select.POLLIN)
            while not answered.poll(0):
                s.sendall(b"a" * 16384)
            s.recv(65536)

    _loop(until, once)


def _half_open(target: Target, until: float, most: int = 3000) -> None:
    held: dict[int, socket.socket] = {}
    poller = select.poll()  # select() cannot watch descriptors above 1024
    while time.monotonic() < until:
        for fd, _event in poller.poll(0):
            poller.unregister(fd)
            held.pop(fd).close()
        while len(held) < most and time.monotonic() < until:
            try:
                sock = rawhttp.tcp(target[0])
            except OSError:
                break
            held[sock.fileno()] = sock
            poller.register(sock, select.POLLIN)
        time.sleep(0.05)
    for sock in held.values():
        sock.close()


def _slow_reader(target: Target, until: float) -> None:
    job = gang_job()
    job["metadata"]["annotations"].update({f"{k.PREFIX}typo{i}": "v" * 100 for i in range(30)})
    one = rawhttp.request(review(job))

    def once() -> None:
        with rawhttp.tls(target[0], _ctx(target[1]), rcvbuf=4096) as s:
            s.settimeout(1)
            while time.monotonic() < until:
                s.sendall(one)  # raises once the server drops us (write deadline)

    _loop(until, once)


def _slowloris(target: Target, until: float, count: int = 50) -> None:
    def once() -> None:
        socks = [rawhttp.tls(target[0], _ctx(target[1])) for _ in range(count)]
        try:
            for s in socks:
                s.sendall(b"POST " + PATH.encode() + b" HTTP/1.1\r\n")
            while time.monotonic() < until:
                for s in socks:
                    s.sendall(b"X")
                time.sleep(1)
        finally:
            for s in socks:
                s.close()

    _loop(until, once)


def _oversized(target: Target, until: float) -> None:
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {1 << 30}\r\n\r\n".encode()

    def once() -> None:
        with rawhttp.tls(target[0], _ctx(target[1])) as s:
            s.sendall(head)
            s.settimeout(1)
            for _ in range(64):
                s.sendall(b"a" * 65536)
            rawhttp.closed_within(s, 5)

    _loop(until, once)


def _patterns(target: Target, until: float) -> dict[str, list[tuple[Callable[..., None], Any]]]:
    amplification = _unknown_keys()
    return {
        "amplification": [(_poster, (target, until, lambda: amplification))] * 20,
        "operations": [(_poster, (target, until, _random_operation))],
        "durations": [(_poster, (target, until, _long_duration))],
        "malformed": [(_poster, (target, until, lambda: b'{"kind": "nope"}'))],
        "headers": [(_header_flood, (target, until))] * 2,
        "half-open": [(_half_open, (target, until))],
        "slow-readers": [(_slow_reader, (target, until))] * 6,
        "slowloris": [(_slowloris, (target, until))],
        "oversized": [(_oversized, (target, until))],
    }


PATTERNS = [
    "amplification",
    "operations",
    "durations",
    "malformed",
    "headers",
    "half-open",
    "slow-readers",
    "slowloris",
    "oversized",
]


def hostile(target: Target, seconds: float, only: tuple[str, ...], niceness: int) -> None:
    """The patterns, each on threads of its own, in this (separate) process."""
    os.nice(niceness)
    until = time.monotonic() + seconds
    jobs = [
        job for name, group in _patterns(target, until).items() if name in only for job in group
    ]
    threads = [threading.Thread(target=f, args=a, daemon=True) for f, a in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 30)


def valid_probe(target: Target, seconds: float, ready: Any, start: Any, out: Any) -> None:
    """Valid reviews over connections opened before the storm; latency of each."""
    body = json.dumps(review(gang_job())).encode()
    latencies: list[float] = []
    errors: list[str] = []
    clients = [_client(target) for _ in range(2)]
    for c in clients:
        c.post(PATH, content=body)  # connect now: the storm may fill the connection limit
    ready.set()
    start.wait()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for c in clients:
            t0 = time.perf_counter()
            try:
                r = c.post(PATH, content=body)
                ok = r.status_code == 200 and r.json()["response"]["allowed"] is True
            except httpx.HTTPError as exc:
                ok, r = False, None
                errors.append(type(exc).__name__)
            latencies.append(time.perf_counter() - t0)
            if not ok and r is not None:
                errors.append(f"HTTP {r.status_code}")
    out.put({"latencies": latencies, "errors": errors})


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def _report(
    seconds: float, rss_before: float, peak: float, cpu: float, result: dict[str, Any]
) -> None:
    lat = sorted(result["latencies"])
    p99 = lat[max(0, int(len(lat) * 0.99) - 1)] * 1000
    p50 = statistics.median(lat) * 1000
    print(f"soak {seconds:.0f} s, all hostile patterns at once, one webhook process")
    print(f"server RSS at start {rss_before:.0f} MB, peak (VmHWM) {peak:.0f} MB  (target <= 200)")
    print(f"server CPU {cpu / seconds * 100:.0f} % of one core over the soak")
    print(f"valid reviews: {len(lat)}, p50 {p50:.1f} ms, p99 {p99:.1f} ms  (target <= 100)")
    print(f"valid review errors: {len(result['errors'])} {sorted(set(result['errors']))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--only", nargs="+", choices=PATTERNS, default=PATTERNS, help="a subset")
    ap.add_argument(
        "--attacker-nice",
        type=int,
        default=0,
        help="niceness of the hostile process (10: it yields the CPU to the server, as an "
        "attacker on other nodes would; 0: it competes for the same 2 cores)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d, run_webhook(Path(d), env={}) as wh:
        target: Target = (wh.port, wh.ca.cert_pem.bytes())
        rss_before = wh.rss_bytes() / 2**20
        ctx = mp.get_context("spawn")
        ready, start, out = ctx.Event(), ctx.Event(), ctx.Queue()
        probe = ctx.Process(target=valid_probe, args=(target, args.seconds, ready, start, out))
        probe.start()
        storm = ctx.Process(
            target=hostile, args=(target, args.seconds, tuple(args.only), args.attacker_nice)
        )
        if not ready.wait(timeout=60):
            raise RuntimeError("the valid probe could not connect")
        storm.start()
        cpu0 = cpu_seconds(wh.proc.pid)
        start.set()
        result = out.get(timeout=args.seconds + 120)
        cpu = cpu_seconds(wh.proc.pid) - cpu0
        peak = _peak_rss_mb(wh.proc.pid)
        storm.join(timeout=60)
        probe.join(timeout=10)
        print("patterns:", " ".join(args.only), f"(attacker nice {args.attacker_nice})")
        _report(args.seconds, rss_before, peak, cpu, result)
        if storm.is_alive():
            storm.kill()


if __name__ == "__main__":
    main()

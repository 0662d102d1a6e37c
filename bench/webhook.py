"""Webhook throughput and latency, measured side by side in one run.

Subjects (all HTTPS, keep-alive, one uvicorn process each, same flags):
  baseline  a minimal FastAPI app returning a canned "allowed" (bench/baseline_app.py);
            the ceiling of this stack, and the ratio targets are against it
  bare_asgi the same canned answer as a bare ASGI app: uvicorn + TLS alone (reference)
  valid     our webhook reviewing the sample Job (hack/demo)
  invalid   our webhook reviewing a Job with three violations
Load: wrk (installed by hack/install-node-deps.sh when missing), 1 thread, --connections
(default 16).
Rounds interleave the subjects so machine noise hits all of them alike;
the median round is reported. Also reports each server's CPU per request (from
/proc, steadier than latency on a noisy VM) and times pure validation in-process.

Usage: .venv/bin/python -m bench.webhook [--rounds 5] [--seconds 5] [--connections 16]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import orjson
import trustme

from atomic_gang import keys as k
from atomic_gang import validate_job
from atomic_gang_devstack.bins import install_node_deps
from atomic_gang_webhook.review import build_response, decide, parse_review
from tests.support.jobs import gang_job, settings
from tests.support.reviews import review
from tests.support.wait import wait_for
from tests.support.webhook_proc import free_port, run_webhook

PATH = "/validate/batch/v1/job"
LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = io.open("%s", "rb"):read("*a")
done = function(summary, latency, requests)
  io.write(string.format('RESULT {"requests": %%d, "duration_us": %%d, "p50_us": %%d,'
    .. ' "p99_us": %%d, "errors": %%d, "non2xx": %%d}\\n', summary.requests,
    summary.duration, latency:percentile(50), latency:percentile(99),
    summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.timeout, summary.errors.status))
end
"""
INVALID = gang_job(annotations={k.MODE: "spot", k.AMI_ID: "nope"}, spec={"parallelism": 2})


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(
    url: str, body: Path, lua_dir: Path, *, seconds: int, conns: int, pid: int
) -> dict[str, float]:
    script = lua_dir / f"{body.stem}.lua"
    script.write_text(LUA % body)
    cpu_before = cpu_seconds(pid)
    out = subprocess.run(
        ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency", "-s", str(script), url + PATH],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout
    cpu = cpu_seconds(pid) - cpu_before
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    r = json.loads(line.removeprefix("RESULT "))
    return {
        "rps": r["requests"] / (r["duration_us"] / 1e6),
        "cpu_us": cpu / max(r["requests"], 1) * 1e6,
        "p50_ms": r["p50_us"] / 1000,
        "p99_ms": r["p99_us"] / 1000,
        "errors": r["errors"] + r["non2xx"],
    }


def start_baseline(
    tmp: Path, stack: ExitStack, target: str = "bench.baseline_app:app"
) -> tuple[str, int]:
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    cert, key = tmp / "b.crt", tmp / "b.key"
    leaf.cert_chain_pems[0].write_to_path(str(cert))
    leaf.private_key_pem.write_to_path(str(key))
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            target,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--ssl-certfile",
            str(cert),
            "--ssl-keyfile",
            str(key),
            "--no-access-log",
            "--log-level",
            "warning",
            "--timeout-keep-alive",
            "30",
        ],
        cwd=Path(__file__).resolve().parent.parent,
    )
    stack.callback(proc.wait, 10)
    stack.callback(proc.terminate)
    url = f"https://127.0.0.1:{port}"
    wait_for(
        lambda: (
            subprocess.run(
                ["curl", "-sk", "-o", "/dev/null", "-XPOST", url + PATH], check=False
            ).returncode
            == 0
        ),
        timeout=30,
        what="baseline",
    )
    return url, proc.pid


def pure_us() -> dict[str, float]:
    s = settings()
    valid, invalid = gang_job(), INVALID
    raws = {"valid": orjson.dumps(review(valid)), "invalid": orjson.dumps(review(INVALID))}
    n = 20_000

    def per_call(fn: Callable[[], object]) -> float:
        return min(timeit.repeat(fn, number=n, repeat=3)) / n * 1e6

    def pipeline(raw: bytes) -> Callable[[], object]:
        def run() -> object:
            req = parse_review(raw)
            return orjson.dumps(build_response(req, decide(req, s)))

        return run

    def bad() -> None:
        with contextlib.suppress(ValueError):
            validate_job(invalid, s)

    return {
        "validate_job(valid) us": per_call(lambda: validate_job(valid, s)),
        "validate_job(invalid) us": per_call(bad),
        "parse+decide+reply(valid) us": per_call(pipeline(raws["valid"])),
        "parse+decide+reply(invalid) us": per_call(pipeline(raws["invalid"])),
    }


def ensure_wrk() -> None:
    """wrk, from Debian's packages (hack/install-node-deps.sh) when it is missing."""
    if shutil.which("wrk") is None:
        install_node_deps()
    if shutil.which("wrk") is None:
        sys.exit("bench/webhook.py needs wrk, and hack/install-node-deps.sh did not install it")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--connections", type=int, default=16)
    args = ap.parse_args()
    ensure_wrk()
    pure = pure_us()
    results: dict[str, list[dict[str, float]]] = {
        "baseline": [],
        "bare_asgi": [],
        "valid": [],
        "invalid": [],
    }
    with tempfile.TemporaryDirectory() as d, ExitStack() as stack:
        tmp = Path(d)
        bodies = {"valid": tmp / "valid.json", "invalid": tmp / "invalid.json"}
        bodies["valid"].write_bytes(json.dumps(review(gang_job())).encode())
        bodies["invalid"].write_bytes(json.dumps(review(INVALID)).encode())
        wh = stack.enter_context(run_webhook(tmp))
        ours = (wh.url, wh.proc.pid)
        base = start_baseline(tmp, stack)
        bare = start_baseline(tmp, stack, "bench.baseline_app:bare_asgi")
        servers = {"baseline": base, "bare_asgi": bare, "valid": ours, "invalid": ours}
        for rnd in range(args.rounds):
            for name, runs in results.items():
                body = bodies.get(name, bodies["valid"])
                url, pid = servers[name]
                r = wrk(url, body, tmp, seconds=args.seconds, conns=args.connections, pid=pid)
                runs.append(r)
                print(
                    f"round {rnd + 1} {name:8s} {r['rps']:8.0f} req/s  p50 {r['p50_ms']:.2f} ms"
                    f"  p99 {r['p99_ms']:.2f} ms  server CPU {r['cpu_us']:.0f} us/req"
                    f"  errors {r['errors']:.0f}",
                    file=sys.stderr,
                )
    report(results, pure, args)


def report(
    results: dict[str, list[dict[str, float]]], pure: dict[str, float], args: argparse.Namespace
) -> None:
    med = {n: {m: statistics.median(r[m] for r in rs) for m in rs[0]} for n, rs in results.items()}
    base = med["baseline"]["rps"]
    print(
        f"\n## webhook bench: {args.rounds} rounds x {args.seconds}s, "
        f"{args.connections} connections, HTTPS keep-alive (medians)\n"
    )
    bare = med["bare_asgi"]["rps"]
    print(
        "| subject | req/s | ratio to baseline | ratio to bare ASGI | p50 ms | p99 ms "
        "| server CPU µs/req | errors |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, m in med.items():
        print(
            f"| {name} | {m['rps']:.0f} | {m['rps'] / base:.2f} | {m['rps'] / bare:.2f} | "
            f"{m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['cpu_us']:.0f} | {m['errors']:.0f} |"
        )
    print("\n| pure validation | µs per Job |\n|---|---|")
    for name, us in pure.items():
        print(f"| {name} | {us:.1f} |")
    checks = {
        "throughput >= 0.7 x baseline (valid)": med["valid"]["rps"] >= 0.7 * base,
        "throughput >= 0.7 x baseline (invalid)": med["invalid"]["rps"] >= 0.7 * base,
        "p99 <= 10 ms (valid)": med["valid"]["p99_ms"] <= 10,
        "p99 <= 10 ms (invalid)": med["invalid"]["p99_ms"] <= 10,
        "validation <= 100 us per Job": max(
            pure["validate_job(valid) us"], pure["validate_job(invalid) us"]
        )
        <= 100,
    }
    print("\n| target | met |\n|---|---|")
    for name, ok in checks.items():
        print(f"| {name} | {'yes' if ok else 'NO'} |")


if __name__ == "__main__":
    main()

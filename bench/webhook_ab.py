"""A/B of the webhook: a git revision against the working tree, side by side.

Two real webhook servers (``atomic-gang-webhook`` over TLS): one runs the code of
REV (a temporary ``git worktree``), the other this checkout. Rounds interleave
both servers and both bodies (a valid Job and one with three violations) under
``wrk -t1 -c16``; each run reports the server's CPU per request (utime + stime
from /proc over the run / requests), p50 and p99. Medians are printed.

Usage: .venv/bin/python -m bench.webhook_ab --rev HEAD~1 [--rounds 5] [--seconds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

from bench.webhook import INVALID, LUA, PATH, cpu_seconds
from tests.support.jobs import gang_job
from tests.support.reviews import review
from tests.support.webhook_proc import WebhookProcess, run_webhook

ROOT = Path(__file__).resolve().parent.parent


def one_run(wh: WebhookProcess, script: Path, seconds: int) -> tuple[float, float, float]:
    before = cpu_seconds(wh.proc.pid)
    out = subprocess.run(
        ["wrk", "-t1", "-c16", f"-d{seconds}s", "--latency", "-s", str(script), wh.url + PATH],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout
    cpu = cpu_seconds(wh.proc.pid) - before
    r = json.loads(next(x for x in out.splitlines() if x.startswith("RESULT "))[7:])
    return cpu / max(r["requests"], 1) * 1e6, r["p50_us"] / 1000, r["p99_us"] / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rev", required=True, help="git revision to compare against")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=4)
    args = ap.parse_args()
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as d, ExitStack() as stack:
        tmp = Path(d)
        tree = tmp / "worktree"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.rev], check=True)
        stack.callback(subprocess.run, ["git", "worktree", "remove", "--force", str(tree)])
        # PYTHONPATH shadows the editable installs with the revision's packages.
        paths = {"rev": f"{tree / 'shared'}:{tree / 'services' / 'webhook'}", "tree": ""}
        servers = {}
        for label, pythonpath in paths.items():
            (tmp / label).mkdir()
            with mock.patch.dict(os.environ, {"PYTHONPATH": pythonpath}):
                servers[label] = stack.enter_context(run_webhook(tmp / label))
        scripts = {}
        for name, job in (("valid", gang_job()), ("invalid", INVALID)):
            (tmp / f"{name}.json").write_bytes(json.dumps(review(job)).encode())
            scripts[name] = tmp / f"{name}.lua"
            scripts[name].write_text(LUA % (tmp / f"{name}.json"))
        for rnd in range(args.rounds):
            for label, wh in servers.items():
                for name, script in scripts.items():
                    r = one_run(wh, script, args.seconds)
                    results.setdefault((label, name), []).append(r)
                    print(
                        f"round {rnd + 1} {label:4s} {name:7s} CPU {r[0]:5.0f} us/req"
                        f"  p50 {r[1]:.2f} ms  p99 {r[2]:.2f} ms",
                        file=sys.stderr,
                    )
    print(f"\n| code | body | server CPU µs/req | p50 ms | p99 ms |  ({args.rounds} rounds)")
    print("|---|---|---|---|---|")
    for (label, name), runs in results.items():
        med = [statistics.median(r[i] for r in runs) for i in range(3)]
        code = args.rev if label == "rev" else "working tree"
        print(f"| {code} | {name} | {med[0]:.0f} | {med[1]:.2f} | {med[2]:.2f} |")


if __name__ == "__main__":
    main()

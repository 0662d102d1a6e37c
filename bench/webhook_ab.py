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

from bench.webhook import INVALID, ensure_wrk, wrk
from tests.support.jobs import gang_job
from tests.support.reviews import review
from tests.support.webhook_proc import run_webhook


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rev", required=True, help="git revision to compare against")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=4)
    args = ap.parse_args()
    ensure_wrk()
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
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
        bodies = {}
        for name, job in (("valid", gang_job()), ("invalid", INVALID)):
            bodies[name] = tmp / f"{name}.json"
            bodies[name].write_bytes(json.dumps(review(job)).encode())
        for rnd in range(args.rounds):
            for label, wh in servers.items():
                for name, body in bodies.items():
                    r = wrk(wh.url, body, tmp, seconds=args.seconds, conns=16, pid=wh.proc.pid)
                    results.setdefault((label, name), []).append(r)
                    print(
                        f"round {rnd + 1} {label:4s} {name:7s} CPU {r['cpu_us']:5.0f} us/req"
                        f"  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms",
                        file=sys.stderr,
                    )
    print(f"\n| code | body | server CPU µs/req | p50 ms | p99 ms |  ({args.rounds} rounds)")
    print("|---|---|---|---|---|")
    for (label, name), runs in results.items():
        med = [statistics.median(r[m] for r in runs) for m in ("cpu_us", "p50_ms", "p99_ms")]
        code = args.rev if label == "rev" else "working tree"
        print(f"| {code} | {name} | {med[0]:.0f} | {med[1]:.2f} | {med[2]:.2f} |")


if __name__ == "__main__":
    main()

"""Scale: G gangs of N (default 100 × 8 = 800 instances) submitted at once against the
complete local stack (control plane, Kueue, moto + layer, one provisioner, the node-join
simulator). Every gang must be satisfied and complete, and every instance released.

Reports the controller's peak RSS and CPU seconds (from /proc), its EC2 calls per gang
(from the fake layer's call log, by the controller's access key), the time from a gang's
last Node turning Ready to our check turning Ready (p50/p99; watches in this process,
one clock) with and without the time moto spent answering the controller's calls in
that window, and how moto slows down as instances pile up (the simulator's one
DescribeInstances of every live managed instance per tick).

Usage: .venv/bin/python -m bench.scale [--gangs 100] [--count 8] [--runs-for 60s]
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from atomic_gang import keys
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components.cloud import fakeaws_endpoint
from atomic_gang_devstack.components.simulated import nodesim_url
from atomic_gang_fakeaws.control import ControlClient
from atomic_gang_nodesim.control import NodeSimClient
from atomic_gang_provisioner.kube import KubeClient
from atomic_gang_provisioner.resources import JOBS, POOLS
from bench import system_stack as sys_stack
from tests.e2e.system.harness import sample_job

NS = "scale"
CONTROLLER = "testing"
RELEASE = {"TerminateInstances", "DescribeNetworkInterfaces", "DeleteNetworkInterface"}
SUBNETS = {"us-east-1a": "10.0.16.0/20", "us-east-1b": "10.0.32.0/20", "us-east-1c": "10.0.48.0/20"}
PER_POOL = {"DescribeLaunchTemplates", "CreateLaunchTemplate"}  # once per new pool shape
SETTINGS = {"joinDeadlineSeconds": 1800, "acquireRetry": {"backoffBaseSeconds": 1}}


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gangs", type=int, default=100)
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--runs-for", default="60s", help="how long each gang's pods run")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--json", type=Path, help="also write the raw figures here")
    return ap.parse_args()


def _jobs_done(kube: KubeClient) -> int:
    items = kube.list(JOBS, namespace=NS).items
    return sum(
        any(c.get("type") == "Complete" and c.get("status") == "True" for c in conds)
        for j in items
        if (conds := (j.get("status") or {}).get("conditions") or [])
    )


def _released(kube: KubeClient, sim: NodeSimClient) -> bool:
    pools = kube.list(POOLS).items
    idle = all((p.get("status") or {}).get("phase") == "Idle" for p in pools)
    return idle and not sum(sim.phases().values())


def _job(g: int, args: argparse.Namespace, subnets: list[str]) -> dict[str, Any]:
    pool = f"scale-{g:03d}"
    job = sample_job(
        pool, NS, pool=pool, count=args.count, runs_for=args.runs_for, keep_warm_ttl="0s"
    )
    job["metadata"]["annotations"].pop(keys.AVAILABILITY_ZONES)
    job["metadata"]["annotations"][keys.SUBNETS] = subnets[g % len(subnets)]
    return job


def _setup(ctx: Context, args: argparse.Namespace, kube: KubeClient) -> list[str]:
    """A namespace, quota for every gang at once, and subnets big enough for them."""
    sys_stack.namespace(kube, NS)
    sys_stack.set_gpu_quota(kube, args.gangs * args.count * 8 + 8)
    return sys_stack.add_subnets(ctx, sys_stack.ec2(ctx), SUBNETS)


def _wait_all(
    kube: KubeClient, sim: NodeSimClient, args: argparse.Namespace, stamps: sys_stack.Stamps
) -> tuple[int, list[tuple[float, int]]]:
    """Progress every 10 s until every Job completed and every instance is released."""
    t0, done, trend = time.time(), 0, []
    while time.time() - t0 < args.timeout:
        live = sum(sim.phases().values())
        trend.append((time.time(), live))
        done = _jobs_done(kube)
        print(
            f"[{time.time() - t0:6.0f}s] checks Ready {len(stamps.check_ready):3d}/{args.gangs}, "
            f"jobs complete {done:3d}, instances live {live}",
            flush=True,
        )
        if done == args.gangs and _released(kube, sim):
            break
        time.sleep(10)  # a progress interval, not a synchronisation
    return done, trend


def _run(ctx: Context, args: argparse.Namespace, stamps: sys_stack.Stamps) -> dict[str, Any]:
    kube = KubeClient.from_kubeconfig(ctx.admin_kubeconfig())
    sim = NodeSimClient(nodesim_url(ctx))
    subnets = _setup(ctx, args, kube)
    fake = ControlClient(fakeaws_endpoint(ctx))
    fake.clear_calls()
    pid = sys_stack.controller_pid(ctx)
    _, cpu0 = sys_stack.proc_stats(pid)
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=16) as pool:  # at once, as far as the apiserver allows
        list(pool.map(lambda g: kube.create(JOBS, _job(g, args, subnets)), range(args.gangs)))
    submitted = time.time() - t0
    done, trend = _wait_all(kube, sim, args, stamps)
    wall = time.time() - t0
    try:
        rss, cpu1 = sys_stack.proc_stats(pid)
    except (OSError, StopIteration):  # it restarted: the figures of the first run are gone
        rss, cpu1 = float("nan"), float("nan")
    return {
        "gangs": args.gangs,
        "count": args.count,
        "submit_seconds": submitted,
        "wall_seconds": wall,
        "jobs_complete": done,
        "released": _released(kube, sim),
        "peak_rss_mb": rss,
        "cpu_seconds": cpu1 - cpu0,
        "calls": fake.calls(),
        "trend": trend,
        "t0": t0,
    }


def _latencies(stamps: sys_stack.Stamps, calls: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(last Node Ready → check Ready, the same minus moto's time on the gang's calls)."""
    mine = [c for c in calls if c["caller"] == CONTROLLER]
    nodes_by_group: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for when, group, iid in stamps.node_ready.values():
        nodes_by_group[group].append((when, iid))
    out = []
    for ready_at, group in stamps.check_ready.values():
        nodes = nodes_by_group.get(group)
        if not nodes:
            continue
        last = max(w for w, _ in nodes)
        ids = {i for _, i in nodes}
        moto = sum(
            c["seconds"]
            for c in mine
            if last <= c["at"] <= ready_at and ids & set(c["params"].values())
        )
        out.append((ready_at - last, max(0.0, ready_at - last - moto)))
    return out


def _report(res: dict[str, Any], lat: list[tuple[float, float]]) -> None:
    g, n = res["gangs"], res["count"]
    calls = res["calls"]
    ctl = [c for c in calls if c["caller"] == CONTROLLER and c["service"] == "ec2"]
    by_action = collections.Counter(c["action"] for c in ctl)
    release = sum(v for k, v in by_action.items() if k in RELEASE)
    per_pool = sum(v for k, v in by_action.items() if k in PER_POOL)
    acquire = len(ctl) - release - per_pool
    outcomes = collections.Counter(c["outcome"] for c in ctl if c["action"] == "RunInstances")
    print(f"\n## scale: {g} gangs of {n} ({g * n} instances), submitted at once\n")
    print(
        f"jobs complete {res['jobs_complete']}/{g}; all released: {res['released']}; "
        f"wall {res['wall_seconds']:.0f} s (submitting took {res['submit_seconds']:.1f} s)"
    )
    print(
        f"controller: peak RSS {res['peak_rss_mb']:.0f} MB (target <= 250), "
        f"CPU {res['cpu_seconds']:.1f} s ({res['cpu_seconds'] / g * 1000:.0f} ms per gang)"
    )
    print(
        f"controller EC2 calls: {len(ctl)} = {len(ctl) / g:.2f} per gang: acquisition "
        f"{acquire / g:.2f} (target <= 3), launch template of a new pool {per_pool / g:.2f}, "
        f"release {release / g:.2f}; RunInstances outcomes {dict(outcomes)}"
    )
    print("| action | calls | per gang | moto s |")
    print("|---|---|---|---|")
    for action, count in by_action.most_common():
        secs = sum(c["seconds"] for c in ctl if c["action"] == action)
        print(f"| {action} | {count} | {count / g:.2f} | {secs:.1f} |")
    raw, net = [a for a, _ in lat], [b for _, b in lat]
    ms = {k: sys_stack.pct(xs, q) * 1000 for k, xs, q in _pcts(raw, net)}
    print(
        f"\nlast Node Ready -> check Ready over {len(lat)} gangs: p50 {ms['raw50']:.0f} ms, "
        f"p99 {ms['raw99']:.0f} ms; minus moto: p50 {ms['net50']:.0f} ms, p99 {ms['net99']:.0f} ms"
    )
    _moto_report(res)


def _pcts(raw: list[float], net: list[float]) -> list[tuple[str, list[float], float]]:
    return [("raw50", raw, 0.5), ("raw99", raw, 0.99), ("net50", net, 0.5), ("net99", net, 0.99)]


def _moto_report(res: dict[str, Any]) -> None:
    by_caller: dict[str, float] = collections.defaultdict(float)
    for c in res["calls"]:
        by_caller[c["caller"]] += c["seconds"]
    print(
        "moto busy seconds by caller: "
        + ", ".join(f"{k} {v:.0f}" for k, v in sorted(by_caller.items()))
    )
    sims = [
        c for c in res["calls"] if c["caller"] == "nodesim" and c["action"] == "DescribeInstances"
    ]
    print("\nmoto slowing down: the simulator's DescribeInstances of every live instance")
    print("| instances live | calls | median s |")
    print("|---|---|---|")
    buckets: dict[int, list[float]] = collections.defaultdict(list)
    for c in sims:
        live = min(res["trend"], key=lambda p: abs(p[0] - c["at"]))[1] if res["trend"] else 0
        buckets[(live // 100) * 100].append(c["seconds"])
    for base in sorted(buckets):
        xs = buckets[base]
        print(f"| {base}-{base + 99} | {len(xs)} | {sys_stack.pct(xs, 0.5):.2f} |")


def main() -> None:
    args = _parse()
    with tempfile.TemporaryDirectory() as d:
        stack, ctx = sys_stack.start(
            Path(d) / "stack", provisioners=1, settings=SETTINGS, boot=(2.0, 3.0)
        )
        try:
            with sys_stack.Stamps(KubeClient.from_kubeconfig(ctx.admin_kubeconfig())) as stamps:
                res = _run(ctx, args, stamps)
            lat = _latencies(stamps, res["calls"])
        finally:
            stack.down()
    _report(res, lat)
    if args.json:
        slim = {k: v for k, v in res.items() if k != "calls"}
        args.json.write_text(json.dumps({**slim, "latencies": lat}, indent=1))


if __name__ == "__main__":
    main()

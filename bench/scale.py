"""Scale: G gangs of N (default 100 × 8 = 800 instances) submitted at once against the
complete local stack (control plane, Kueue, moto + layer, one provisioner, the node-join
simulator). Every gang must be satisfied and complete, and every instance released.

Reports the controller's peak RSS and CPU seconds (from /proc), its EC2 calls per gang
(from the fake layer's call log, by the controller's access key), the time from a gang's
last Node turning Ready to our check turning Ready (p50/p99; watches in this process,
one clock) with and without the time moto spent answering the controller's calls in
that window, and how moto slows down as instances pile up (the simulator's one
DescribeInstances of every live managed instance per tick). While the gangs join (first
Node Ready to last check Ready) it reads the box: CPU by process, any apiserver write's
latency (``bench.apiserver_probe``), every client's writes by verb and resource and the
apiserver's own mean times (``bench.apiserver_view``); and how often our check changed
per gang, by message, and every Event by kind and reason.

Ends with the targets table (one run) and, with ``--json``, writes its measures
(``reaction_p50_ms``, ``reaction_p99_ms`` net of moto, ``ec2_calls_per_gang`` for
acquisition, new pools included, ``throttled``, ``rss_mb``, ``cpu_s_per_gang``; and, for
reading a noisy run, the box's ``box_steal``, ``box_stalled_s`` and ``nodes_lapsed``: Nodes
that went not Ready before their release, each a health describe and more reconciles).
``--curve 25,50,100,200`` runs a fresh stack at each size instead and prints the
controller's CPU seconds per gang and peak RSS at each.

Usage: .venv/bin/python -m bench.scale [--gangs 100] [--count 8] [--runs-for 60s]
       [--json out.json] [--curve 25,50,100,200] [--keep-logs DIR] [--timeline FILE]
       [--gpus-only] [--control-plane-qps N] [--foreign-nodes N --foreign-workloads M]

``--timeline FILE`` writes the raw stamps for analysis (JSON): each EC2 call of the run
with its time, and when each Node turned Ready, each pool Satisfied, each check Ready
and each Workload Admitted, as this process's watches saw them.

``--gpus-only`` drops the demo Job's pod anti-affinity: its 8-GPU request alone keeps
one pod per node. It measures what the scheduler's anti-affinity checks cost the wall
time at 800 pods (docs/benchmarks.md#reading-the-wall).

``--foreign-nodes N --foreign-workloads M`` runs the same size twice, each on a fresh
stack, and prints the two side by side: a bare run, then one where another team's N
Nodes and M Workloads (``bench.foreign``) are created first. It reports the
controller's CPU while they are created and until the cluster has settled (Kueue and
the node lifecycle controller done with them; the gangs start only then), its RSS
before and after, its peak RSS and the reaction over the run, a replica restarted
after the run (the controller killed: its peak once its caches synced; in both runs)
and that replica's RSS once the foreign objects are deleted. The size the footprint
targets are set at: ``--gangs 20 --count 4 --foreign-nodes 10000 --foreign-workloads
20000`` (docs/benchmarks.md#footprint-another-teams-nodes-and-workloads).

``--control-plane-qps N`` lets the kube-controller-manager, the scheduler and Kueue
make N API requests a second (burst 2N) instead of upstream's 20, 50 and 50: at 800
pods the Job controller's pod creates and finalizer removals alone are ~1,600 writes,
80 s at 20 a second, so upstream's rates put the wall target out of any provisioner's
reach (docs/benchmarks.md#reading-the-wall).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from atomic_gang import keys
from atomic_gang.resources import EVENTS, JOBS, POOLS
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components.cloud import fakeaws_endpoint
from atomic_gang_devstack.components.simulated import nodesim_url
from atomic_gang_fakeaws.control import ControlClient
from atomic_gang_nodesim.control import NodeSimClient
from atomic_gang_provisioner.kube import KubeClient
from bench import box, foreign
from bench import system_stack as sys_stack
from bench.scale_report import lapsed_before_release, last_release, measures, report, targets
from bench.scale_stamps import latencies, pod_starts, split
from tests.e2e.system.harness import sample_job

NS = "scale"
SUBNETS = {"us-east-1a": "10.0.16.0/20", "us-east-1b": "10.0.32.0/20", "us-east-1c": "10.0.48.0/20"}
# 10 pool workers, as docs/operations.md "Many gangs at once" advises for 100 gangs joining
# at once (the spec's default is 5): a describe answer satisfies a dozen pools at a time.
QUIET = 10.0  # seconds without a change to the foreign Workloads: Kueue is done with them
SETTINGS = {
    "maxConcurrentPoolReconciles": 10,
    "joinDeadlineSeconds": 1800,
    "acquireRetry": {"backoffBaseSeconds": 1},
}


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gangs", type=int, default=100)
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--runs-for", default="60s", help="how long each gang's pods run")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--json", type=Path, help="also write the measures here")
    ap.add_argument("--curve", help="comma-separated gang counts: the cost curve")
    ap.add_argument("--keep-logs", type=Path, help="copy the stack's process logs here")
    ap.add_argument("--timeline", type=Path, help="write the calls and watch stamps here")
    ap.add_argument(
        "--instance-type",
        default="p4d.24xlarge",
        help="the gangs' type (the demo's p4d reads its network topology; m5.large has none)",
    )
    ap.add_argument(
        "--gpus-only", action="store_true", help="no pod anti-affinity: the GPU request alone"
    )
    ap.add_argument(
        "--control-plane-qps",
        type=int,
        help="API client rate of the kube-controller-manager, scheduler and Kueue (burst 2x);\n"
        "unset keeps upstream's 20, 50 and 50 (the Job controller's 20/s paces 800 pods)",
    )
    ap.add_argument(
        "--foreign-nodes", type=int, default=0, help="another team's Nodes (side by side run)"
    )
    ap.add_argument(
        "--foreign-workloads",
        type=int,
        default=0,
        help="another team's Workloads, in a queue without our check (side by side run)",
    )
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
    job["metadata"]["annotations"][keys.INSTANCE_TYPE] = args.instance_type
    job["metadata"]["annotations"][keys.SUBNETS] = subnets[g % len(subnets)]
    if args.gpus_only:
        del job["spec"]["template"]["spec"]["affinity"]
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


def _events(kube: KubeClient) -> dict[str, int]:
    """Every Event by its object's kind and reason (the pools': how many sets were
    released, and why), each repetition counted."""
    counts: collections.Counter[str] = collections.Counter()
    for e in kube.list(EVENTS).items:
        kind = (e.get("involvedObject") or {}).get("kind")
        counts[f"{kind} {e.get('reason')}"] += int(e.get("count") or 1)
    return dict(counts.most_common())


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
    polled = time.time() - t0
    calls = fake.calls()
    try:
        rss, cpu1 = sys_stack.proc_stats(pid)
    except (OSError, StopIteration):  # it restarted: the figures of the first run are gone
        rss, cpu1 = float("nan"), float("nan")
    return {
        "gangs": args.gangs,
        "count": args.count,
        "submit_seconds": submitted,
        "wall_seconds": last_release(calls, polled + t0) - t0,
        "wall_polled_seconds": polled,
        "jobs_complete": done,
        "released": _released(kube, sim),
        "peak_rss_mb": rss,
        "cpu_seconds": cpu1 - cpu0,
        "calls": calls,
        "events": _events(kube),
        "trend": trend,
        "t0": t0,
    }


def _one(
    args: argparse.Namespace, *, crowded: bool = False, side_by_side: bool = False
) -> tuple[dict[str, Any], list[tuple[float, float]]]:
    """One run on a fresh stack; ``crowded``: another team's objects are created first,
    and deleted after; ``side_by_side``: the controller is restarted after the run (and
    before the deletes), for the peak of a replica that starts there."""
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as later:
        stack, ctx = sys_stack.start(
            Path(d) / "stack",
            provisioners=1,
            settings=SETTINGS,
            boot=(2.0, 3.0),
            control_plane_qps=args.control_plane_qps,
        )
        try:
            kube = KubeClient.from_kubeconfig(ctx.admin_kubeconfig())
            crowd = later.enter_context(foreign.Settled(kube)) if crowded else None
            burst = _burst(ctx, kube, args, crowd) if crowd is not None else {}
            probe = box.WriteProbe(ctx.admin_kubeconfig(), Path(d) / "probe.txt")
            with (
                sys_stack.Stamps(
                    kube, pods=bool(args.timeline), namespace=NS, node_selector=keys.POOL
                ) as stamps,
                box.CpuSampler() as cpu,
                box.RequestCounter(ctx.kubectl, lambda: _edges(stamps, args.gangs)) as requests,
                probe,
            ):
                res = _run(ctx, args, stamps)
            res["queues"] = sys_stack.queue_times(ctx)
            if side_by_side:
                restart = _restart(ctx)
                after = _deleted(ctx, kube, crowd, restart["pid"]) if crowd is not None else {}
                res["foreign"] = {**burst, **restart, **after}
            res["box"] = _box(stamps, cpu, probe, requests)
            ready = {group: at for at, group in stamps.check_ready.values()}
            # When each instance's gang was acquired (its check Ready): calls about it
            # after that are the gang's release, not its acquisition.
            res["acquired_at"] = {
                iid: ready[g] for _, g, iid in stamps.node_ready.values() if g in ready
            }
            res["split"] = split(stamps)
            res["pod_starts"] = pod_starts(stamps)
            res["from_ready_condition"] = [
                net for _, net in latencies(stamps, res["calls"], for_pods=False)
            ]
            res["check_writes"] = dict(stamps.check_writes)
            res["nodes_lapsed"] = lapsed_before_release(stamps.node_lapsed, res["calls"])
            if args.timeline:
                _write_timeline(args.timeline, res, stamps)
            return res, latencies(stamps, res["calls"])
        finally:
            stack.down()
            if args.keep_logs:
                shutil.copytree(Path(d) / "stack" / "logs", args.keep_logs, dirs_exist_ok=True)


def _burst(
    ctx: Context, kube: KubeClient, args: argparse.Namespace, crowd: foreign.Settled
) -> dict[str, Any]:
    """Another team's Nodes and Workloads, created side by side. The controller's CPU
    while they are created (first create to last), and until the cluster has settled:
    Kueue done with the Workloads (those its quota holds admitted, then ``QUIET``
    seconds without a change) and the node lifecycle controller with the Nodes (each
    one's not-ready taint swapped); its RSS before and after."""
    nodes, workloads = args.foreign_nodes, args.foreign_workloads
    foreign.setup(kube)
    pid = sys_stack.controller_pid(ctx)
    idle = foreign.rss_mb(pid)
    _, cpu0 = sys_stack.proc_stats(pid)
    created = foreign.create(kube, nodes=nodes, workloads=workloads)
    _, cpu1 = sys_stack.proc_stats(pid)
    admitted = min(foreign.ADMITTED, workloads)
    settled = crowd.wait(
        lambda n, w, reserved, quiet: (
            (n, w, reserved) == (nodes, workloads, admitted) and quiet >= QUIET
        ),
        timeout=args.timeout,
        what="Kueue admitting the Workloads it has quota for, the node lifecycle "
        "controller swapping each new Node's not-ready taint",
    )
    _, cpu2 = sys_stack.proc_stats(pid)
    print(
        f"[foreign] {nodes} Nodes and {workloads} Workloads created in {created:.0f} s "
        f"(controller CPU {cpu1 - cpu0:.2f} s), the cluster settled "
        f"{created + settled:.0f} s after the first create (controller CPU "
        f"{cpu2 - cpu0:.2f} s)",
        flush=True,
    )
    return {
        "nodes": nodes,
        "workloads": workloads,
        "create_seconds": created,
        "create_cpu_seconds": cpu1 - cpu0,
        "window_seconds": created + settled,
        "window_cpu_seconds": cpu2 - cpu0,
        "rss_idle_mb": idle,
        "rss_after_burst_mb": foreign.rss_mb(pid),
    }


def _restart(ctx: Context) -> dict[str, Any]:
    """A replica started where the run left the cluster: the controller killed, the
    stack's restart wrapper starts it again; its peak RSS once its caches synced."""
    old = sys_stack.controller_pid(ctx)
    before = foreign.rss_mb(old)
    os.kill(old, signal.SIGKILL)
    t0 = time.monotonic()
    new = _restarted(ctx, old)
    return {
        "pid": new,
        "rss_before_restart_mb": before,
        "restart_ready_seconds": time.monotonic() - t0,
        "restart_peak_rss_mb": sys_stack.proc_stats(new)[0],
    }


def _deleted(ctx: Context, kube: KubeClient, crowd: foreign.Settled, pid: int) -> dict[str, Any]:
    """The foreign objects deleted: the replica's RSS once they are gone."""
    foreign.delete(kube)
    crowd.wait(lambda n, w, *_: n == w == 0, timeout=600, what="the foreign objects deleted")
    if not _ready(ctx, timeout=60):
        raise RuntimeError("the controller is not ready after the foreign objects went")
    return {"rss_after_delete_mb": foreign.rss_mb(pid)}


def _restarted(ctx: Context, old: int) -> int:
    """The new controller process once it is ready (caches synced)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with contextlib.suppress(RuntimeError, OSError, ValueError):
            pid = sys_stack.controller_pid(ctx)
            if pid != old and _ready(ctx, timeout=0):
                return pid
        time.sleep(0.5)  # a restart poll, not a synchronisation
    raise TimeoutError("the controller did not come back ready within 300 s")


def _ready(ctx: Context, *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.HTTPError):
            url = f"http://127.0.0.1:{ctx.port(sys_stack.LEADER)}/readyz"
            if httpx.get(url, timeout=5).status_code == 200:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)  # a readiness poll, not a synchronisation


def _edges(stamps: sys_stack.Stamps, gangs: int) -> int:
    """The rush's edges passed: its first Node Ready, its last check Ready."""
    return int(bool(stamps.node_ready)) + int(len(stamps.check_ready) >= gangs)


def _box(
    stamps: sys_stack.Stamps,
    cpu: box.CpuSampler,
    probe: box.WriteProbe,
    requests: box.RequestCounter,
) -> dict[str, Any]:
    """The box while the gangs joined (first Node Ready to last check Ready)."""
    start = min((w for w, _, _ in stamps.node_ready.values()), default=0.0)
    end = max((w for w, _ in stamps.check_ready.values()), default=0.0)
    seconds, used = cpu.window(start, end)
    write_seconds, writes_by_kind = requests.window(start, end)
    return {
        "seconds": seconds,
        "cores": os.cpu_count() or 1,
        "cpu": used,
        "steal": cpu.steal(start, end),
        "stalls": cpu.stalls(start, end),
        "cpu_model": box.cpu_model(),
        "writes": probe.latencies(start, end),
        "apiserver_writes": {"seconds": write_seconds, "by_kind": writes_by_kind},
    }


def _write_timeline(path: Path, res: dict[str, Any], stamps: sys_stack.Stamps) -> None:
    path.write_text(
        json.dumps(
            {
                "t0": res["t0"],
                "calls": res["calls"],
                "node_ready": list(stamps.node_ready.values()),
                "node_labelled": stamps.node_labelled,
                "node_untainted": stamps.node_untainted,
                "satisfied": stamps.satisfied,
                "check_ready": stamps.check_ready,
                "admitted": stamps.admitted,
                "finished": stamps.finished,
                "workload_seen": stamps.workload_seen,
                "reserved": stamps.reserved,
                "pods": stamps.pods,
                "unsuspended": stamps.unsuspended,
            }
        )
    )


def _curve(args: argparse.Namespace) -> None:
    rows = []
    for gangs in [int(x) for x in args.curve.split(",")]:
        res, lat = _one(argparse.Namespace(**{**vars(args), "gangs": gangs}))
        rows.append((gangs, measures(res, lat)))
    base = rows[0][1]["cpu_s_per_gang"] or float("nan")
    print(f"\n## cost curve: gangs of {args.count}\n")
    print(
        "| gangs | CPU s per gang | × smallest | peak RSS MB | EC2 calls per gang | throttled "
        "| Nodes lapsed | box stalled s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for gangs, m in rows:
        ratio = m["cpu_s_per_gang"] / base
        print(
            f"| {gangs} | {m['cpu_s_per_gang']:.3f} | {ratio:.2f} | {m['rss_mb']:.0f} | "
            f"{m['ec2_calls_per_gang']} | {m['throttled']} | {m['nodes_lapsed']} | "
            f"{m.get('box_stalled_s', 0)} |"
        )
    if args.json:
        args.json.write_text(json.dumps({str(g): m for g, m in rows}, indent=1))


def _side_by_side(args: argparse.Namespace) -> None:
    """A bare run and a crowded one (another team's objects first), each on a fresh stack."""
    legs = []
    for crowded in (False, True):
        res, lat = _one(args, crowded=crowded, side_by_side=True)
        report(res, lat)
        legs.append((res["foreign"], measures(res, lat)))
    (bare_f, bare), (f, crowded_m) = legs
    crowd = f"{f['nodes']:,} foreign Nodes, {f['workloads']:,} foreign Workloads"
    print(f"\n## footprint: {args.gangs} gangs × {args.count}, bare and with {crowd}\n")
    print(f"| measure | bare | with {crowd} | × bare | target |")
    print("|---|---|---|---|---|")
    _row("controller peak RSS (VmHWM)", bare["rss_mb"], crowded_m["rss_mb"], "MB", "≤ 1.2 × bare")
    for q in ("p50", "p99"):
        _row(
            f"reaction {q}, last Node Ready → check Ready, net of moto",
            bare[f"reaction_{q}_ms"],
            crowded_m[f"reaction_{q}_ms"],
            "ms",
            "≤ 1.2 × bare",
        )
    _row(
        "controller CPU a gang",
        1000 * bare["cpu_s_per_gang"],
        1000 * crowded_m["cpu_s_per_gang"],
        "ms",
        "",
    )
    if "apiserver_write_p50_ms" in bare and "apiserver_write_p50_ms" in crowded_m:
        _row(
            "(the box) any apiserver write while the gangs joined, p50",
            bare["apiserver_write_p50_ms"],
            crowded_m["apiserver_write_p50_ms"],
            "ms",
            "",
        )
        b = bare["reaction_p50_ms"] / bare["apiserver_write_p50_ms"]
        c = crowded_m["reaction_p50_ms"] / crowded_m["apiserver_write_p50_ms"]
        print(f"| (the box) reaction p50 in those writes | {b:.1f} | {c:.1f} | {c / b:.2f} | |")
    for what, cpu, span in (
        ("while they were created", f["create_cpu_seconds"], f["create_seconds"]),
        ("until the cluster settled", f["window_cpu_seconds"], f["window_seconds"]),
    ):
        print(
            f"| controller CPU {what} | — | {100 * cpu / span:.2f} % of a core ({cpu:.2f} s "
            f"over {span:.0f} s) | | ≤ 5 % |"
        )
    print(
        "| controller RSS: idle before them → once the cluster settled → after the gangs | "
        f"{bare_f['rss_before_restart_mb']:.0f} MB after the gangs | {f['rss_idle_mb']:.0f} → "
        f"{f['rss_after_burst_mb']:.0f} → {f['rss_before_restart_mb']:.0f} MB | | |"
    )
    _row(
        "a replica restarted after the gangs: peak RSS once its caches synced",
        bare_f["restart_peak_rss_mb"],
        f["restart_peak_rss_mb"],
        "MB",
        "",
    )
    print(
        f"| that replica's RSS once the foreign objects were deleted | | "
        f"{f['rss_after_delete_mb']:.0f} MB | | |"
    )
    if args.json:
        out = {"bare": bare, "bare_restart": bare_f, "crowded": crowded_m, "foreign": f}
        args.json.write_text(json.dumps(out, indent=1))


def _row(what: str, bare: float, crowded: float, unit: str, target: str) -> None:
    ratio = crowded / bare if bare else float("nan")
    print(f"| {what} | {bare:.0f} {unit} | {crowded:.0f} {unit} | {ratio:.2f} | {target} |")


def main() -> None:
    args = _parse()
    if args.curve:
        _curve(args)
        return
    if args.foreign_nodes or args.foreign_workloads:
        _side_by_side(args)
        return
    res, lat = _one(args)
    report(res, lat)
    m = measures(res, lat)
    targets(m, args)
    if args.json:
        args.json.write_text(json.dumps(m, indent=1))


if __name__ == "__main__":
    main()

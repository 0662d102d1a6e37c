"""The scale bench's report: what the controller called, the reaction times, moto's
slowdown, the targets' measures and the targets table (see ``bench/scale.py``)."""

from __future__ import annotations

import argparse
import collections
import re
from typing import Any

from bench import apiserver_view
from bench import system_stack as sys_stack

CONTROLLER = "testing"
RELEASE = {"TerminateInstances", "DescribeNetworkInterfaces", "DeleteNetworkInterface"}
PER_POOL = {"DescribeLaunchTemplates", "CreateLaunchTemplate"}  # once per new pool shape
LAUNCH_BURST, LAUNCH_RATE = 5, 2.0  # EC2's RunInstances bucket: the launch budget's floor


def report(res: dict[str, Any], lat: list[tuple[float, float]]) -> None:
    g, n = res["gangs"], res["count"]
    calls = res["calls"]
    ctl = [c for c in calls if c["caller"] == CONTROLLER and c["service"] == "ec2"]
    by_action = collections.Counter(c["action"] for c in ctl)
    release = sum(v for k, v in by_action.items() if k in RELEASE)
    per_pool = sum(v for k, v in by_action.items() if k in PER_POOL)
    acquire = len(acquisition_calls(res))
    outcomes = collections.Counter(c["outcome"] for c in ctl if c["action"] == "RunInstances")
    print(f"\n## scale: {g} gangs of {n} ({g * n} instances), submitted at once\n")
    print(
        f"jobs complete {res['jobs_complete']}/{g}; all released: {res['released']}; "
        f"wall {res['wall_seconds']:.0f} s to the last instance released (the 10 s progress "
        f"poll saw it at {res['wall_polled_seconds']:.0f} s; submitting took "
        f"{res['submit_seconds']:.1f} s)"
    )
    print(
        f"controller: peak RSS {res['peak_rss_mb']:.0f} MB (target <= 250), "
        f"CPU {res['cpu_seconds']:.1f} s ({res['cpu_seconds'] / g * 1000:.0f} ms per gang)"
    )
    print(
        f"controller EC2 calls: {len(ctl)} = {len(ctl) / g:.2f} per gang: acquisition "
        f"{acquire / g:.2f} (target <= 2.0, new pools included: launch templates "
        f"{per_pool / g:.2f}), release {release / g:.2f}; RunInstances outcomes {dict(outcomes)}"
    )
    acquiring = collections.Counter(c["action"] for c in acquisition_calls(res))
    print("| action | calls | per gang | of which acquisition | moto s |")
    print("|---|---|---|---|---|")
    for action, count in by_action.most_common():
        secs = sum(c["seconds"] for c in ctl if c["action"] == action)
        print(
            f"| {action} | {count} | {count / g:.2f} | {acquiring[action] / g:.2f} | {secs:.1f} |"
        )
    raw, net = [a for a, _ in lat], [b for _, b in lat]
    ms = {k: sys_stack.pct(xs, q) * 1000 for k, xs, q in _pcts(raw, net)}
    print(
        f"\nlast Node ready for pods (Ready, not-ready taint lifted) -> check Ready over "
        f"{len(lat)} gangs: p50 {ms['raw50']:.0f} ms, p99 {ms['raw99']:.0f} ms; minus moto: "
        f"p50 {ms['net50']:.0f} ms, p99 {ms['net99']:.0f} ms"
    )
    if cond := res.get("from_ready_condition"):
        print(
            "  from the last Ready condition instead (the node lifecycle controller's taint "
            f"lift included), minus moto: p50 {sys_stack.pct(cond, 0.5) * 1000:.0f} ms, "
            f"p99 {sys_stack.pct(cond, 0.99) * 1000:.0f} ms"
        )
    _box_report(res.get("box") or {}, net)
    if lapsed := res.get("nodes_lapsed"):
        print(
            f"Nodes whose Ready lapsed before their instance was terminated: {lapsed} (the "
            "simulated kubelets' leases lagged on a busy box; each costs its pool a health "
            "describe and reconciles: more CPU a gang)"
        )
    check_writes_report(res.get("check_writes") or {})
    events = res.get("events") or {}
    pools = {k.split(" ", 1)[1]: n for k, n in events.items() if k.startswith("GangNodePool ")}
    print(f"pool Events by reason (a release names its cause): {pools}")
    print(f"every Event by kind and reason: {events}")
    throttled = collections.Counter(
        c["action"] for c in ctl if c["outcome"] == "error:RequestLimitExceeded"
    )
    print(f"our calls EC2 throttled, by action: {dict(throttled)}")
    for side, xs in (res.get("split") or {}).items():
        if xs:
            name = f"{side} side" if side in ("pool", "workload") else f"{side} the last Ready"
            after = f" (after it in {sum(x > 0 for x in xs)} of {len(xs)} gangs)"
            print(
                f"  {name}: p50 {sys_stack.pct(xs, 0.5) * 1000:.0f} ms, "
                f"p99 {sys_stack.pct(xs, 0.99) * 1000:.0f} ms" + ("" if "side" in name else after)
            )
    for stage, xs in (res.get("pod_starts") or {}).items():
        if xs:
            print(
                f"  {stage}: p50 {sys_stack.pct(xs, 0.5):.1f} s, p90 "
                f"{sys_stack.pct(xs, 0.9):.1f} s, max {max(xs):.1f} s ({len(xs)} pods)"
            )
    for ctl, q in (res.get("queues") or {}).items():
        print(
            f"  {ctl} queue: {q['reconciles']:.0f} reconciles, mean wait "
            f"{q['wait_mean_s'] * 1000:.0f} ms, mean reconcile {q['took_mean_s'] * 1000:.0f} ms"
        )
    _moto_report(res)


MASK = re.compile(r"subnet-[0-9a-f]+|[0-9]+")


def _box_report(box: dict[str, Any], net: list[float]) -> None:
    """How busy the box was while the gangs joined, and what any apiserver write cost."""
    if not box.get("seconds"):
        return
    span, cores, used = box["seconds"], box["cores"], box["cpu"]
    print(
        f"the box while the gangs joined (first Node Ready to last check Ready, {span:.0f} s, "
        f"{cores} cores, {box.get('cpu_model') or 'CPU model unknown'}): "
        f"{100 * sum(used.values()) / (span * cores):.0f} % busy, "
        f"{100 * box.get('steal', 0.0) / (span * cores):.0f} % stolen by the hypervisor; CPU s: "
        + ", ".join(f"{k} {v:.1f}" for k, v in used.items() if v >= 0.5)
    )
    if stalls := box.get("stalls"):
        print(
            f"the box STALLED {len(stalls)} time(s), {sum(stalls):.0f} s in all (every process "
            "stood still: a VM pause, e.g. a snapshot): this run's latencies are not the stack's"
        )
    m = _box_measures(box)
    if m and net:
        p50 = m["apiserver_write_p50_ms"]
        print(
            f"any apiserver write meanwhile (bench.apiserver_probe: a ConfigMap PATCH every "
            f"200 ms from its own process, {len(box['writes'])} writes): p50 {p50:.0f} ms, "
            f"p90 {m['apiserver_write_p90_ms']:.0f} ms; the reaction's p50 is "
            f"{sys_stack.pct(net, 0.5) * 1000 / p50:.1f} of them"
        )
    apiserver_view.report(box.get("apiserver_writes") or {})


def check_writes_report(check_writes: dict[str, list[tuple[str, str]]]) -> None:
    """How often our check changed per gang (each change is one of our applies; Kueue's
    entry, Pending without a message, is not), and which messages they were, numbers
    and subnets masked."""
    ours = {wl: [(s, m) for s, m in writes if m] for wl, writes in check_writes.items()}
    if not ours:
        return
    kinds: collections.Counter[str] = collections.Counter()
    for writes in ours.values():
        kinds.update(f"{state}: {MASK.sub('#', message)[:60]}" for state, message in writes)
    per_gang = sum(len(w) for w in ours.values()) / len(ours)
    print(f"our check's writes a gang (the bench's watch): {per_gang:.2f}; by kind:")
    for kind, n in kinds.most_common(12):
        print(f"  {n:5d}  {kind}")


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


def acquisition_calls(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The controller's EC2 calls that acquire: all but the release ones and those whose
    every instance belongs to a gang already acquired (its check Ready), e.g. the
    describes that watch a released set go. Calls naming no instance (launches,
    discovery, templates, the reaper's listings) all count."""
    acquired: dict[str, float] = res.get("acquired_at", {})
    out = []
    for c in res["calls"]:
        if c["caller"] != CONTROLLER or c["service"] != "ec2" or c["action"] in RELEASE:
            continue
        ids = instance_ids(c)
        if not ids or any(c["at"] < acquired.get(i, float("inf")) for i in ids):
            out.append(c)
    return out


def instance_ids(call: dict[str, Any]) -> list[str]:
    """The instance ids a recorded EC2 call names (its query parameters)."""
    return [v for v in call["params"].values() if isinstance(v, str) and v.startswith("i-")]


def lapsed_before_release(lapsed: dict[str, float], calls: list[dict[str, Any]]) -> int:
    """Instances whose Node went not Ready before the controller terminated them."""
    ended = {
        iid: c["at"]
        for c in calls
        if c["caller"] == CONTROLLER and c["action"] == "TerminateInstances"
        for iid in instance_ids(c)
    }
    return sum(at < ended.get(iid, float("inf")) for iid, at in lapsed.items())


def last_release(calls: list[dict[str, Any]], fallback: float) -> float:
    """When the controller's last TerminateInstances was answered (EC2 stops billing an
    instance once it is shutting down): the end of the wall, sharper than the 10 s poll."""
    ends = [
        c["at"] + c["seconds"]
        for c in calls
        if c["caller"] == CONTROLLER
        and c["action"] == "TerminateInstances"
        and c["outcome"] == "ok"
    ]
    return max(ends, default=fallback)


def measures(res: dict[str, Any], lat: list[tuple[float, float]]) -> dict[str, float]:
    """The targets' measures of one run."""
    g = res["gangs"]
    ctl = [c for c in res["calls"] if c["caller"] == CONTROLLER and c["service"] == "ec2"]
    acquisition = acquisition_calls(res)
    net = [b for _, b in lat]
    return {
        "reaction_p50_ms": round(sys_stack.pct(net, 0.5) * 1000, 1),
        "reaction_p99_ms": round(sys_stack.pct(net, 0.99) * 1000, 1),
        **_from_condition(res.get("from_ready_condition") or []),
        "ec2_calls_per_gang": round(len(acquisition) / g, 2),
        "throttled": sum(c["outcome"] == "error:RequestLimitExceeded" for c in ctl),
        "rss_mb": round(res["peak_rss_mb"], 1),
        "cpu_s_per_gang": round(res["cpu_seconds"] / g, 3),
        "wall_s": round(res["wall_seconds"], 1),
        "nodes_lapsed": res.get("nodes_lapsed", 0),
        **_box_measures(res.get("box") or {}),
    }


def _from_condition(net: list[float]) -> dict[str, float]:
    if not net:
        return {}
    return {
        "reaction_from_ready_condition_p50_ms": round(sys_stack.pct(net, 0.5) * 1000, 1),
        "reaction_from_ready_condition_p99_ms": round(sys_stack.pct(net, 0.99) * 1000, 1),
    }


def _box_measures(box: dict[str, Any]) -> dict[str, float]:
    writes, span = box.get("writes") or [], box.get("seconds") or 0.0
    if not writes or not span:
        return {}
    return {
        "apiserver_write_p50_ms": round(sys_stack.pct(writes, 0.5) * 1000, 1),
        "apiserver_write_p90_ms": round(sys_stack.pct(writes, 0.9) * 1000, 1),
        "box_busy": round(sum(box["cpu"].values()) / (span * box["cores"]), 3),
        "box_steal": round(box.get("steal", 0.0) / (span * box["cores"]), 3),
        "box_stalled_s": round(sum(box.get("stalls") or []), 1),
    }


def targets(m: dict[str, float], args: argparse.Namespace) -> None:
    floor = max(0.0, (args.gangs - LAUNCH_BURST) / LAUNCH_RATE)
    runs = seconds(args.runs_for)
    qps = args.control_plane_qps
    rates = f"{qps}/s" if qps else "upstream's 20/s (KCM), 50/s (scheduler, Kueue)"
    print(f"\n## targets: {args.gangs} gangs × {args.count} at once, control plane at {rates}\n")
    print("| measure | this run | target |")
    print("|---|---|---|")
    print(
        "| last Node Ready (and its not-ready taint lifted) → check Ready, net of moto | "
        f"p50 {m['reaction_p50_ms']:.0f} ms / p99 {m['reaction_p99_ms']:.0f} ms | "
        "p50 ≤ 300 ms, p99 ≤ 1,000 ms |"
    )
    if "reaction_from_ready_condition_p50_ms" in m:
        print(
            "| (no target) the same from the Ready condition alone | "
            f"p50 {m['reaction_from_ready_condition_p50_ms']:.0f} ms / "
            f"p99 {m['reaction_from_ready_condition_p99_ms']:.0f} ms | |"
        )
    print(
        "| EC2 calls per gang, acquisition, new pools included | "
        f"{m['ec2_calls_per_gang']} | ≤ 2.0 |"
    )
    print(f"| our calls that EC2 throttled | {m['throttled']} | 0 |")
    print(f"| controller peak RSS | {m['rss_mb']:.0f} MB | ≤ 200 MB |")
    print(
        f"| wall time, submission → last instance released (jobs run {runs:.0f} s) | "
        f"{m['wall_s']:.1f} s | ≤ {floor + runs + 30:.1f} s (launch floor {floor:.1f} s) |"
    )
    if "apiserver_write_p50_ms" in m:
        print(
            f"| (the box, no target) any apiserver write while the gangs joined | "
            f"p50 {m['apiserver_write_p50_ms']:.0f} ms / p90 {m['apiserver_write_p90_ms']:.0f} ms, "
            f"CPU {100 * m['box_busy']:.0f} % busy, {100 * m['box_steal']:.0f} % stolen | |"
        )


def seconds(text: str) -> float:
    return float(text.removesuffix("s")) if text.endswith("s") else float(text)

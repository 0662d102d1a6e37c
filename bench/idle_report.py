"""The idle-cost bench's side-by-side table (ours vs the incremental baseline), and our
controller's own cost metric beside the bench's ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
from prometheus_client.parser import text_string_to_metric_families

from atomic_gang_devstack.component import Context
from atomic_gang_provisioner.cost import INSTANCE_SECONDS
from bench.idle_trace import Trace
from bench.system_stack import LEADER, pct

if TYPE_CHECKING:
    from bench.idle_cost import PhaseResult


def _ratio(base: float, ours: float) -> str:
    if ours == 0:
        return "∞" if base > 0 else "–"
    return f"{base / ours:.2f}×"


def _rows(res: PhaseResult) -> dict[str, float]:
    done = [r for r in res.runs if r.done is not None]
    completion = [r.done - r.job.arrival for r in done if r.done is not None]
    waits = [r.all_running - r.job.arrival for r in done if r.all_running is not None]
    s = res.ledger.seconds
    return {
        "jobs finished": len(done),
        "idle burn: stranded partial sets (instance-s)": s["stranded"],
        "peak instances in partial sets": res.ledger.peak_stranded,
        "booting/joining with all N held (instance-s)": s["booting"],
        "running, all N pods up (instance-s)": s["running"],
        "after the job: release/consolidation (instance-s)": s["tail"],
        "total billed (instance-s)": res.ledger.billed,
        "job completion p50 (s)": pct(completion, 0.5),
        "job completion p90 (s)": pct(completion, 0.9),
        "job completion max (s)": max(completion, default=0.0),
        "wait for all N pods p50 (s)": pct(waits, 0.5),
        "makespan (s)": res.makespan,
        "capacity free while a waiting gang fitted it (slot-s)": res.ledger.free_while_fitting,
    }


def report(
    trace: Trace, ours: PhaseResult, base: PhaseResult, *, today: PhaseResult | None = None
) -> None:
    sizes = sorted({j.count for j in trace.jobs})
    print(
        f"\n## idle cost: {len(trace.jobs)} gang Jobs (N in {sizes}), capacity "
        + " -> ".join(f"{slots}@{at:.0f}s" for at, slots in trace.capacity)
        + "\n"
    )
    print(f"| | {ours.name} | {base.name} | baseline / ours |")
    print("|---|---|---|---|")
    a, b = _rows(ours), _rows(base)
    for key in a:
        fmt = "{:.0f}" if "jobs" in key or "peak" in key else "{:.1f}"
        print(f"| {key} | {fmt.format(a[key])} | {fmt.format(b[key])} | {_ratio(b[key], a[key])} |")
    print(f"| RunInstances calls | {_calls(ours)} | {_calls(base)} | |")
    run, billed = "running, all N pods up (instance-s)", "total billed (instance-s)"
    print(
        f"\nbilled per useful instance-second: ours {a[billed] / max(a[run], 1):.2f}, "
        f"baseline {b[billed] / max(b[run], 1):.2f}"
    )
    if today is not None:
        _against_today(today, ours, base)


def report_alone(trace: Trace, res: PhaseResult) -> None:
    """One phase on its own (``--baseline-only``, ``--ours-only``): its rows and its
    RunInstances calls."""
    print(f"\n## {res.name} alone: {len(trace.jobs)} gang Jobs\n")
    print(f"| | {res.name} |")
    print("|---|---|")
    for key, value in _rows(res).items():
        fmt = "{:.0f}" if "jobs" in key or "peak" in key else "{:.1f}"
        print(f"| {key} | {fmt.format(value)} |")
    print(f"| RunInstances calls | {_calls(res)} |")


def _failed(res: PhaseResult) -> int:
    return sum(v for k, v in res.launches.items() if k != "ok")


def _against_today(today: PhaseResult, ours: PhaseResult, base: PhaseResult) -> None:
    """The issue's targets for the short-cell cache, on this one run's trace."""
    t, a, b = _rows(today), _rows(ours), _rows(base)
    p50, top = "job completion p50 (s)", "job completion max (s)"
    idle = "idle burn: stranded partial sets (instance-s)"
    failed_t, failed_a = _failed(today), _failed(ours)
    print(f"\n## the short-cell cache: {today.name} vs {ours.name}, same trace\n")
    print("| measure | cache off (today) | cache on | target |")
    print("|---|---|---|---|")
    print(
        f"| failed RunInstances | {failed_t} | {failed_a} | ≥ 5× fewer "
        f"({_ratio(failed_t, failed_a)}) |"
    )
    print(f"| {p50} | {t[p50]:.1f} | {a[p50]:.1f} | ≤ {1.1 * t[p50]:.1f} (+10 %) |")
    print(f"| {top} | {t[top]:.1f} | {a[top]:.1f} | ≤ {b[top]:.1f} (the baseline's) |")
    print(f"| {idle} | {t[idle]:.1f} | {a[idle]:.1f} | 0 |")
    free = "capacity free while a waiting gang fitted it (slot-s)"
    print(f"| {free} | {t[free]:.1f} | {a[free]:.1f} | |")
    print(
        f"| {'total billed (instance-s)'} | {t['total billed (instance-s)']:.1f} | "
        f"{a['total billed (instance-s)']:.1f} | |"
    )


def _calls(res: PhaseResult) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(res.launches.items()))


def billed_by_state(ctx: Context, pools: set[str]) -> dict[str, float]:
    """What the controller's own cost metric says these pools billed, by state."""
    text = httpx.get(f"http://127.0.0.1:{ctx.port(LEADER)}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for sample in fam.samples:
            if sample.name == INSTANCE_SECONDS + "_total" and sample.labels["pool"] in pools:
                state = sample.labels["state"]
                out[state] = out.get(state, 0.0) + sample.value
    return out


def report_metric(ours: PhaseResult) -> None:
    """The controller's ``atomic_gang_instance_seconds_total`` beside the bench's own
    ledger (EC2 sampled every 0.5 s). The states are cut differently (the ledger's
    "running" waits for all N pods, the metric's for N Ready nodes), so totals compare."""
    m, ledger = ours.metric, ours.ledger
    total = sum(m.values())
    print("\n## ours: the cost metric against the bench's ledger (instance-s)\n")
    print("| state | atomic_gang_instance_seconds_total | bench ledger (EC2 sampled) |")
    print("|---|---|---|")
    pairs = [("stranded", "stranded"), ("launching", "booting"), ("running", "running")]
    for state, use in pairs:
        print(f"| {state} / {use} | {m.get(state, 0.0):.1f} | {ledger.seconds[use]:.1f} |")
    after = m.get("keep-warm", 0.0) + m.get("releasing", 0.0)
    print(f"| keep-warm + releasing / tail | {after:.1f} | {ledger.seconds['tail']:.1f} |")
    gap = (total - ledger.billed) / ledger.billed if ledger.billed else 0.0
    print(f"| total | {total:.1f} | {ledger.billed:.1f} |")
    print(f"\nmetric vs ledger, total: {gap:+.1%} (target: within ±5 %)")

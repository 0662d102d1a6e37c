"""The apiserver's own view of a window: every client's writes by verb and resource,
and its timings of them (server-side latency, the etcd round trip, each admission
webhook, time queued by priority and fairness), from two reads of its /metrics."""

from __future__ import annotations

import collections
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE"})
# Counter name -> (our key's prefix, the labels that name the row). A histogram is read
# as its _count and _sum (seconds): means over a window, in the apiserver's own clock.
COUNTERS = {
    "apiserver_request_total": ("writes", ("verb", "resource", "subresource")),
    "apiserver_request_duration_seconds": ("write", ("verb", "resource", "subresource")),
    "etcd_request_duration_seconds": ("etcd", ("operation",)),
    "apiserver_admission_webhook_admission_duration_seconds": ("webhook", ("name", "operation")),
    "apiserver_flowcontrol_request_wait_duration_seconds": ("queued", ("priority_level",)),
}
Counts = dict[str, float]  # e.g. "writes PATCH nodes/status", "write_sum APPLY workloads/status"


def _row(prefix: str, names: tuple[str, ...], labels: dict[str, str]) -> str:
    values = [labels.get(n, "") for n in names]
    if names[-1] == "subresource":  # "VERB resource[/subresource]"
        verb, res, sub = values
        return f"{prefix} {verb} {res}/{sub}" if sub else f"{prefix} {verb} {res}"
    return " ".join([prefix, *values])


def apiserver_counts(metrics: str) -> Counts:
    """The apiserver's write requests so far by verb and resource, with its own timings
    of them (server-side latency, the etcd round trip, each admission webhook, time
    queued by priority and fairness), from its /metrics."""
    counts: Counts = collections.defaultdict(float)
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            base, _, part = sample.name.rpartition("_")
            name, suffix = (base, f"_{part}") if part in ("count", "sum") else (sample.name, "")
            if name not in COUNTERS or (
                "verb" in sample.labels and sample.labels["verb"] not in WRITE_VERBS
            ):
                continue
            prefix, names = COUNTERS[name]
            counts[_row(prefix + suffix, names, sample.labels)] += sample.value
    return dict(counts)


def means_ms(window: Counts) -> dict[str, tuple[float, float]]:
    """Row -> (how many, mean ms) of every histogram in a window."""
    out: dict[str, tuple[float, float]] = {}
    for key, count in window.items():
        prefix, _, row = key.partition(" ")
        if prefix.endswith("_count") and count > 0:
            total = window.get(f"{prefix.removesuffix('_count')}_sum {row}", 0.0)
            out[f"{prefix.removesuffix('_count')} {row}"] = (count, 1000 * total / count)
    return out


# The rows a reaction is made of: our pool's status, our check (and Kueue's applies), the
# probe's write, what every write waits on in etcd, Kueue's webhook on each check write.
SHOWN = (
    "write PUT gangnodepools/status",
    "write APPLY workloads/status",
    "write PATCH configmaps",
    "etcd update",
    "webhook vworkload.kb.io UPDATE",
    "queued workload-low",
)


def report(window: dict[str, Any]) -> None:
    by_kind, seconds = window.get("by_kind") or {}, window.get("seconds") or 0.0
    if not by_kind or not seconds:
        return
    writes = {k.removeprefix("writes "): v for k, v in by_kind.items() if k.startswith("writes ")}
    print(
        f"apiserver writes meanwhile ({seconds:.0f} s, every client): "
        f"{sum(writes.values()) / seconds:.0f}/s; "
        + ", ".join(f"{k} {v:.0f}" for k, v in writes.items() if v >= 1)
    )
    means = means_ms(by_kind)
    shown = [f"{row} {means[row][1]:.0f} ms ({means[row][0]:.0f})" for row in SHOWN if row in means]
    if shown:
        print("the apiserver's own mean times meanwhile (how many): " + ", ".join(shown))

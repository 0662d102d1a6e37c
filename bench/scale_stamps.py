"""The scale bench's per-gang figures from its watch stamps: the reaction, its split
between the pool and the Workload side, and how the gangs' pods started."""

from __future__ import annotations

import collections
from typing import Any

from bench import system_stack as sys_stack
from bench.scale_report import CONTROLLER


def latencies(
    stamps: sys_stack.Stamps, calls: list[dict[str, Any]], *, for_pods: bool = True
) -> list[tuple[float, float]]:
    """(last Node ready → check Ready, the same minus moto's time on the gang's calls).
    A Node is ready for pods once Ready with the not-ready taint lifted (Satisfied waits
    for both); with ``for_pods=False``, once its Ready condition is True."""
    mine = [c for c in calls if c["caller"] == CONTROLLER]
    nodes_by_group: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for when, group, iid in stamps.node_ready.values():
        ready = stamps.node_untainted.get(iid, when) if for_pods else when
        nodes_by_group[group].append((ready, iid))
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


def split(stamps: sys_stack.Stamps) -> dict[str, list[float]]:
    """Per gang: last Node ready for pods (as ``latencies``) -> its pool Satisfied (the
    pool side), then Satisfied -> check Ready (the Workload side), as this process's
    watches saw them; for gangs whose Nodes got network-layer labels, last Node Ready ->
    last label seen (positive: a label patch stood between the last Ready and
    Satisfied); and last Node Ready -> the last not-ready taint lifted (the node
    lifecycle controller's part: Satisfied waits for it)."""
    last: dict[str, float] = {}
    labelled: dict[str, float] = {}
    untainted: dict[str, float] = {}
    for when, group, iid in stamps.node_ready.values():
        last[group] = max(when, last.get(group, 0.0))
        for seen, latest in ((stamps.node_labelled, labelled), (stamps.node_untainted, untainted)):
            if iid in seen:
                latest[group] = max(seen[iid], latest.get(group, 0.0))
    out: dict[str, list[float]] = {
        "pool": [],
        "workload": [],
        "last label after": [],
        "last taint lifted after": [],
    }
    for ready_at, group in stamps.check_ready.values():
        sat = stamps.satisfied.get(group)
        if sat is not None and group in last:
            out["pool"].append(sat - max(last[group], untainted.get(group, 0.0)))
            out["workload"].append(ready_at - sat)
            for name, latest in (
                ("last label after", labelled),
                ("last taint lifted after", untainted),
            ):
                if group in latest:
                    out[name].append(latest[group] - last[group])
    return out


def pod_starts(stamps: sys_stack.Stamps) -> dict[str, list[float]]:
    """Per pod of a gang Job: its Job let run -> pod created (the Job controller), created
    -> bound to a Node (the scheduler: a pod that found its Node tainted backs off)."""
    out: dict[str, list[float]] = {"Job let run -> pod created": [], "pod created -> bound": []}
    for key, stages in stamps.pods.items():
        started = stamps.unsuspended.get(key.rsplit("-", 2)[0])
        if started is not None and "created" in stages:
            out["Job let run -> pod created"].append(stages["created"] - started)
        if "created" in stages and "bound" in stages:
            out["pod created -> bound"].append(stages["bound"] - stages["created"])
    return out

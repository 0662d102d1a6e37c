"""``atomic-gang explain [jobset/|trainjob/]<namespace>/<name>``: a short timeline and
the one reason a gang Job, JobSet or TrainJob waits.

``gather`` reads the object, its Workload (by owner), our AdmissionCheck (the
one of the Workload's checks whose controllerName is ours), its pool (``_pool``) and
the Events of the object and its Workload; ``timeline`` and ``render`` are pure. Exit 0 once
explained (waiting or not), 1 for no such object, 2 for an unreadable cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from atomic_gang import keys
from atomic_gang.pool_access import namespaced_name
from atomic_gang_cli.kube import Reader
from atomic_gang_cli.why import Obj, Seen, check_state, conditions, kind_of, verdict

# Conditions worth a line: when they turned True (or, for QuotaReserved, False too).
WORKLOAD_CONDITIONS = ("QuotaReserved", "Admitted", "Evicted", "Requeued", "PodsReady", "Finished")
POOL_CONDITIONS = ("CapacityShortfall", "Failed", "Degraded", "Ready", "Released")


@dataclass(frozen=True, slots=True, order=True)
class Entry:
    at: datetime
    who: str
    what: str
    detail: str = ""


def gather(
    reader: Reader, namespace: str, name: str, *, controller_name: str, kind: str = "Job"
) -> Seen | None:
    """What the cluster says of the gang ``kind`` (Job, JobSet, TrainJob) ``namespace/name``."""
    job = reader.job(namespace, name) if kind == "Job" else reader.custom(kind, namespace, name)
    if job is None:
        return None
    uid = (job.get("metadata") or {}).get("uid")
    workload = next(
        (
            w
            for w in reader.workloads(namespace)
            if any(
                r.get("uid") == uid for r in (w.get("metadata") or {}).get("ownerReferences") or []
            )
        ),
        None,
    )
    check_name, check = _our_check(reader, workload, controller_name)
    label = ((job.get("metadata") or {}).get("labels") or {}).get(keys.POOL)
    pool = _pool(reader, str(label), namespace) if label else None
    # The pool's Events reach the claimant's own objects (its Workload and Job); the
    # pool's own copies are in the controller's namespace, for its operators.
    names = {name, *([_name(workload)] if workload else [])}
    events = reader.events(namespace, names=names)
    return Seen(
        owner=job,
        workload=workload,
        check_name=check_name,
        check=check,
        pool=pool,
        events=tuple(events),
        denied=tuple(reader.denied),
    )


def _pool(reader: Reader, label: str, namespace: str) -> Obj | None:
    """The pool the label names in ``namespace``: its own ``<namespace>.<label>``, else
    the bare-named pool (a name the admin lists, or one from an older release) when it
    is this namespace's or holds its claim; never another namespace's."""
    own = reader.pool(namespaced_name(label, namespace))
    if own is not None:
        return own
    bare = reader.pool(label)
    spec = (bare or {}).get("spec") or {}
    ours = spec.get("ownerNamespace") == namespace or (
        (spec.get("claim") or {}).get("namespace") == namespace
    )
    return bare if ours else None


def _name(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name", ""))


def _our_check(reader: Reader, workload: Obj | None, controller: str) -> tuple[str, Obj | None]:
    for state in ((workload or {}).get("status") or {}).get("admissionChecks") or []:
        check = reader.admission_check(str(state.get("name")))
        if check is not None and (check.get("spec") or {}).get("controllerName") == controller:
            return str(state["name"]), check
    return "", None


def _when(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _conditions(obj: Obj | None, who: str, types: tuple[str, ...]) -> Iterator[Entry]:
    for type_, cond in conditions(obj).items():
        at = _when(cond.get("lastTransitionTime"))
        shown = cond.get("status") == "True" or type_ == "QuotaReserved"
        if at is not None and type_ in types and shown:
            what = f"{type_}={cond.get('status')} {cond.get('reason', '')}".rstrip()
            yield Entry(at, who, what, str(cond.get("message", "")))


# What the event recorders put in front of the fact: Kueue's folding, our mirroring.
_PREFIXES = re.compile(r"^(?:\(combined from similar events\): |Pool [a-z0-9.-]+: )+")


def _events(events: tuple[Obj, ...]) -> Iterator[Entry]:
    """One entry per reason: the controller mirrors a pool's Events onto the Job and the
    Workload, and a retrying acquisition repeats them, so a reason is shown once, at its
    first time, with how often (the most any one object got) and the latest message."""
    runs: dict[str, list[tuple[datetime, str, int, str]]] = {}
    for e in events:
        at = _when(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp"))
        if at is not None:
            kind = str((e.get("involvedObject") or {}).get("kind", ""))
            message = _PREFIXES.sub("", str(e.get("message", "")))
            runs.setdefault(str(e.get("reason", "")), []).append(
                (at, kind, int(e.get("count") or 1), message)
            )
    for reason, seen in runs.items():
        per_object: dict[str, int] = {}
        for _, kind, count, _ in seen:
            per_object[kind] = per_object.get(kind, 0) + count
        times, last = max(per_object.values()), max(seen)
        more = f" ×{times}, last {last[0].strftime('%H:%M:%SZ')}" if times > 1 else ""
        yield Entry(min(seen)[0], "event", f"{reason}{more}", last[3])


def timeline(seen: Seen) -> list[Entry]:
    out: list[Entry] = []
    created = _when((seen.owner.get("metadata") or {}).get("creationTimestamp"))
    if created is not None:
        out.append(Entry(created, kind_of(seen.owner), "created"))
    if seen.workload is not None and (
        at := _when(seen.workload["metadata"].get("creationTimestamp"))
    ):
        out.append(Entry(at, "Workload", f"created: {_name(seen.workload)}"))
    out += _conditions(seen.workload, "Workload", WORKLOAD_CONDITIONS)
    state = check_state(seen)
    if state is not None and (at := _when(state.get("lastTransitionTime"))) is not None:
        out.append(
            Entry(
                at,
                "check",
                f"{seen.check_name}={state.get('state')}",
                str(state.get("message", "")),
            )
        )
    out += _conditions(seen.pool, "GangNodePool", POOL_CONDITIONS)
    out += _events(seen.events)
    return sorted(out)


def _attempt(seen: Seen) -> str:
    """Which attempt this is, from Kueue's retryCount on our check ("" on the first)."""
    state = check_state(seen) or {}
    n = state.get("retryCount")
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return ""
    evictions = f"{n} eviction{'s' if n > 1 else ''}"
    return f"attempt {n + 1}: Kueue requeued the Workload after {evictions} by our check's Retry"


def render(seen: Seen, *, limit: int = 15) -> str:
    meta = seen.owner.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    pool = (meta.get("labels") or {}).get(keys.POOL, "-")
    shape = f"{annotations.get(keys.COUNT, '?')}×{annotations.get(keys.INSTANCE_TYPE, '?')}"
    named = f"{kind_of(seen.owner)} {meta.get('namespace')}/{meta.get('name')}"
    lines = [f"{named}: gang {shape}, pool {pool}"]
    lines += [attempt] if (attempt := _attempt(seen)) else []
    lines.append("")
    entries = timeline(seen)
    if len(entries) > limit:
        lines.append(f"  … {len(entries) - limit} earlier entries")
    for e in entries[-limit:]:
        detail = f": {e.detail}" if e.detail else ""
        lines.append(f"  {e.at.strftime('%H:%M:%SZ')}  {e.who:<12} {e.what}{detail}")
    v = verdict(seen)
    lines += ["", f"{'Waiting for' if v.waiting else 'Not waiting'}: {v.reason}"]
    if v.detail:
        lines.append(f"  {v.detail}")
    lines += [f"  (could not read {d})" for d in seen.denied]
    return "\n".join(lines) + "\n"

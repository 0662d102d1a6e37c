"""The one reason a gang Job waits, from what a read-only identity can see (pure).

Read in the order a Job travels: the Job, Kueue's Workload (quota), our
AdmissionCheck on it, then the pool, read only through its status contract
(docs/design.md "The condition contract between the reconcilers"): the conditions
Ready, CapacityShortfall, Failed, Degraded, plus ``claimKey`` (which claim they speak
for: ``<workload uid>@<claimed at>``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from atomic_gang import keys

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """Everything read for one gang Job, JobSet or TrainJob."""

    owner: Obj  # the Job, JobSet or TrainJob
    workload: Obj | None = None
    check_name: str = ""  # our AdmissionCheck's name on the Workload; "" if none is ours
    check: Obj | None = None  # that AdmissionCheck object
    pool: Obj | None = None
    events: tuple[Obj, ...] = ()
    denied: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    waiting: bool
    reason: str  # short: "capacity shortfall 3/10", "joining 3/4", "quota"
    detail: str = ""  # the words of whoever decided, and what to do


def conditions(obj: Obj | None) -> dict[str, Obj]:
    return {
        str(c.get("type")): c for c in ((obj or {}).get("status") or {}).get("conditions") or []
    }


def _true(obj: Obj | None, type_: str) -> Obj | None:
    found = conditions(obj).get(type_)
    return found if found is not None and found.get("status") == "True" else None


# The conditions that say a gang object is done, by kind.
FINISHED = {
    "Job": ("Complete", "Failed"),
    "JobSet": ("Completed", "Failed"),
    "TrainJob": ("Complete", "Failed"),
}


def kind_of(owner: Obj) -> str:
    """The owner's kind, as the reader returned it ("Job" when it names none)."""
    kind = str(owner.get("kind") or "Job")
    return kind if kind in FINISHED else "Job"


def check_state(seen: Seen) -> Obj | None:
    states = ((seen.workload or {}).get("status") or {}).get("admissionChecks") or []
    return next((s for s in states if s.get("name") == seen.check_name), None)


def verdict(seen: Seen) -> Verdict:
    owner = seen.owner
    kind = kind_of(owner)
    labels = (owner.get("metadata") or {}).get("labels") or {}
    for type_ in FINISHED[kind]:
        if _true(owner, type_) is not None:
            return Verdict(False, f"the {kind} is {type_}")
    if keys.POOL not in labels:
        return Verdict(False, f"not a gang {kind}", f"no {keys.POOL} label: we do not act on it")
    if seen.workload is None:
        return _no_workload(seen, labels)
    return _workload(seen)


def _no_workload(seen: Seen, labels: Mapping[str, str]) -> Verdict:
    if any("workloads" in d for d in seen.denied):
        return Verdict(True, "unknown", "this identity may not list Workloads")
    queue = labels.get(keys.QUEUE_NAME_LABEL)
    if not queue:
        return Verdict(True, "no queue", f"set the {keys.QUEUE_NAME_LABEL} label")
    return Verdict(
        True,
        "no Workload yet",
        f"Kueue has not picked the Job up: is there a LocalQueue {queue} in this namespace, "
        "and is Kueue running?",
    )


def _workload(seen: Seen) -> Verdict:
    wl = seen.workload
    if (done := _true(wl, "Finished")) is not None:
        return Verdict(False, "the Workload is Finished", str(done.get("message", "")))
    if (admitted := _true(wl, "Admitted")) is not None:
        if (repair := _repairing(seen)) is not None:
            return repair
        return Verdict(False, "admitted", str(admitted.get("message", "")))
    if _true(wl, "QuotaReserved") is None:
        why = conditions(wl).get("QuotaReserved") or conditions(wl).get("Requeued") or {}
        return Verdict(True, "quota", str(why.get("message", "")) or "queued in its ClusterQueue")
    return _check(seen)


def _check(seen: Seen) -> Verdict:
    if not seen.check_name:
        return Verdict(True, "no atomic-gang check", "the ClusterQueue lists no check of ours")
    inactive = conditions(seen.check).get("Active")
    if inactive is not None and inactive.get("status") != "True":
        what = f"{inactive.get('reason')}: {inactive.get('message')}"
        return Verdict(True, f"AdmissionCheck {seen.check_name} is not Active", what)
    state = check_state(seen) or {}
    message = str(state.get("message", ""))
    if state.get("state") == "Rejected":
        return Verdict(True, "a permanent error", message)
    if state.get("state") == "Retry":
        return Verdict(True, "Retry", f"{message}; Kueue releases the quota and requeues it")
    if state.get("state") == "Ready":
        return Verdict(True, "check Ready", "Kueue admits the Workload next")
    return _pool(seen, message)


_COUNT = re.compile(r"(\d+)/(\d+)")
_REPAIRING = re.compile(r"Repairing (\d+) of (\d+) nodes")


def _repairing(seen: Seen) -> Verdict | None:
    """An admitted gang whose pool repairs broken nodes for this claim: some of its pods
    wait for the replacements (Ready's message names the nodes, what broke them and the
    deadline)."""
    pool, uid = seen.pool, str(((seen.workload or {}).get("metadata") or {}).get("uid", ""))
    claim = str(((pool or {}).get("status") or {}).get("claimKey", ""))
    ready = conditions(pool).get("Ready") or {}
    if not claim.startswith(f"{uid}@") or ready.get("reason") != "Repairing":
        return None
    text = str(ready.get("message", ""))
    found = _REPAIRING.search(text)
    what = f" {found.group(1)} of {found.group(2)} nodes" if found else ""
    return Verdict(True, f"repairing{what}", f"{text}; the pods of the broken nodes wait for them")


def _fraction(text: str) -> str:
    found = _COUNT.search(text)
    return f" {found.group(1)}/{found.group(2)}" if found else ""


def _pool(seen: Seen, message: str) -> Verdict:
    pool, uid = seen.pool, str(((seen.workload or {}).get("metadata") or {}).get("uid", ""))
    if pool is None:
        return Verdict(True, "no pool yet", message or "the controller has not seen the claim")
    claim = str((pool.get("status") or {}).get("claimKey", ""))
    if claim and not claim.startswith(f"{uid}@"):
        return Verdict(True, "the pool is busy with another claim", message)
    for type_, reason in (("Failed", "a permanent error"), ("Degraded", "a gang member was lost")):
        if (cond := _true(pool, type_)) is not None:
            return Verdict(True, reason, str(cond.get("message", "")))
    if (short := _true(pool, "CapacityShortfall")) is not None:
        text = str(short.get("message", ""))
        return Verdict(True, f"capacity shortfall{_fraction(text)}", text)
    ready = conditions(pool).get("Ready") or {}
    text = str(ready.get("message", "")) or message
    if ready.get("reason") == "Joining":
        return Verdict(True, f"joining{_fraction(text)}", text)
    if "Capacity Block" in text and "starts at" in text:
        return Verdict(True, "waiting for the capacity block to start", text)
    return Verdict(True, "acquiring", text)

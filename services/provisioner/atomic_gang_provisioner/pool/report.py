"""What the pool reconciler reports: the contract's conditions, from the status it writes.

``refresh`` runs after every phase decision, so each status write carries conditions
that agree with it (``api.conditions`` says what each one means, and is all the
Workload side reads). Messages are written for the claimant: its AdmissionCheck shows
them as they are. ``lastTransitionTime`` moves only when a condition flips. What the
stored ``lastErrorReason`` means (permanent, rejecting, a shortfall, a wait) is read off
the typed reason itself; a fact an outcome also announces (a failed attempt) is worded
by that outcome (``outcomes.py``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, NamedTuple

from atomic_gang_provisioner.api import Condition, GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api import conditions as c
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool.model import Knobs, devices_note, has_resources, update
from atomic_gang_provisioner.pool.outcomes import AttemptFailed
from atomic_gang_provisioner.pool.rules import block, health

MAX_MESSAGE = 32768  # metav1.Condition's limit; the check message is cut at 32000


def gave_up(status: GangNodePoolStatus, knobs: Knobs) -> bool:
    """The claimant must get Retry (or Rejected): too many shortfalls, or an error that
    retrying can't fix."""
    return (
        status.lastErrorReason.permanent
        or status.consecutiveShortfalls >= knobs.attempts_before_retry
    )


def _acquiring(status: GangNodePoolStatus) -> bool:
    return status.phase in ("Idle", "Acquiring") and bool(status.claimKey)


def _attempt(status: GangNodePoolStatus, knobs: Knobs) -> str:
    return f"attempt {status.consecutiveShortfalls}/{knobs.attempts_before_retry}"


def _last_attempt(pool: GangNodePool, s: GangNodePoolStatus, knobs: Knobs) -> AttemptFailed:
    """The last failed attempt, as the outcome that announced it words it."""
    return AttemptFailed.recorded(
        shape=pool.spec.shape.summary,
        attempt=s.consecutiveShortfalls,
        attempts=knobs.attempts_before_retry,
        reason=s.lastErrorReason,
        detail=s.lastError,
    )


def progress(pool: GangNodePool, s: GangNodePoolStatus, knobs: Knobs) -> str:
    """Ready's message: where the gang stands, in the claimant's words."""
    shape = pool.spec.shape
    n = shape.count
    reason = s.lastErrorReason
    if s.phase == "Idle":
        return f"No instances, nothing billed; a claim acquires {shape.summary}"
    if s.phase == "Acquiring" and reason is FailureReason.CAPACITY_RESERVATION_NOT_STARTED:
        return f"{s.lastError}; holding quota, nothing billed"
    if s.phase == "Acquiring" and reason.waits:  # its turn for the launch budget or a cell
        # A wait after shortfalls keeps them in view: the wait replaced lastError.
        failed = f" ({_attempt(s, knobs)} failed)" if s.consecutiveShortfalls else ""
        return (
            f"Acquiring {shape.summary}{failed}: {s.lastError}; holding quota, nothing billed yet"
        )
    if s.phase == "Acquiring" and reason and s.consecutiveShortfalls:
        return _last_attempt(pool, s, knobs).progress()
    if s.phase == "Acquiring":
        return c.acquiring(pool.spec.shape)
    if s.phase == "Joining":
        deadline = s.joinDeadline.strftime("%H:%M:%SZ") if s.joinDeadline else "?"
        return (
            f"Launched {n}×{shape.instanceType} (group {s.activeGroup}){block.where(s, knobs)}; "
            f"{s.readyCount}/{n} nodes Ready{devices_note(pool, s.readyWithoutDevices)}; "
            f"join deadline {deadline}"
        )
    if s.phase == "Releasing":
        why = f" ({s.lastErrorReason}: {s.lastError})" if s.lastErrorReason else ""
        return f"Releasing the previous node set{why}; a fresh gang follows"
    if s.phase == "KeepWarm":
        return f"Reusing the warm set of group {s.activeGroup}"
    if s.phase == "Satisfied":
        return f"{s.readyCount}/{n} nodes of group {s.activeGroup} are Ready{block.where(s, knobs)}"
    if s.phase == "Repairing" and s.repair is not None:
        return _repairing(s, n, knobs)
    return f"Pool phase {s.phase}"


def _repairing(s: GangNodePoolStatus, n: int, knobs: Knobs) -> str:
    """``Repairing 1 of 64 nodes: i-… AcceleratedHardwareReady=False (NvidiaXID79Error)
    since …; 63 kept; …``: the claimant's check shows it while its pods wait."""
    repair = s.repair
    assert repair is not None
    k = len(repair.broken)
    broken = "; ".join(health.describe(b) for b in repair.broken)
    deadline = (repair.startedAt + knobs.repair_deadline).strftime("%H:%M:%SZ")
    if repair.replacements:
        where = (
            f"replacements {' '.join(repair.replacements)} joining, {s.readyCount}/{n} nodes Ready"
        )
    elif repair.attempts:
        where = f"{repair.attempts} launch(es) of {k} fell short (last: {s.lastError})"
    else:
        where = f"launching {k} replacement(s)"
    return (
        f"Repairing {k} of {n} nodes of group {s.activeGroup}: {broken}; {n - k} kept; "
        f"{where}; repair deadline {deadline}"
    )


def _failure(pool: GangNodePool, s: GangNodePoolStatus) -> str:
    shape = pool.spec.shape.summary
    reason = s.lastErrorReason
    if reason.rejects:
        return f"Invalid gang: {s.lastError}"
    if reason.block_timing:
        return (
            f"Cannot start {shape} in a listed reservation now: {s.lastError}; releasing "
            "quota so Kueue can requeue (nothing was billed)"
        )
    if reason.permanent:
        return (
            f"Cannot acquire {shape}: {s.lastError}. Retrying will not help until "
            "this is fixed; releasing quota (nothing was billed)"
        )
    return (
        f"Gave up after {s.consecutiveShortfalls} consecutive failed attempts to acquire "
        f"{shape} (last: {s.lastErrorReason}: {s.lastError}); releasing quota so "
        "Kueue can requeue (nothing was billed)"
    )


class _Fact(NamedTuple):
    type: c.ConditionType
    true: bool
    reason: str
    message: str = ""
    check_state: Literal["Retry", "Rejected"] | None = None


def _facts(pool: GangNodePool, s: GangNodePoolStatus, knobs: Knobs) -> tuple[_Fact, ...]:
    reason = s.lastErrorReason
    # A repair keeps the claimant admitted: its check stays Ready, the message says why
    # some of its pods wait.
    satisfied = s.phase in ("Satisfied", "Repairing")
    failed = _acquiring(s) and gave_up(s, knobs)
    short = _acquiring(s) and s.consecutiveShortfalls > 0 and reason.shortfall
    degraded = bool(s.degradedClaimKey)
    released = s.phase == "Idle" and not has_resources(s)
    verdict: Literal["Retry", "Rejected"] = "Rejected" if reason.rejects else "Retry"
    ready_reason = s.phase if satisfied else s.lastErrorReason or s.phase
    return (
        _Fact(c.READY, satisfied, ready_reason, progress(pool, s, knobs)),
        _Fact(c.CAPACITY_SHORTFALL, short, "NoShortfall")
        if not short
        else _Fact(c.CAPACITY_SHORTFALL, True, reason, _last_attempt(pool, s, knobs).fell_short()),
        _Fact(c.FAILED, False, "NotFailed")
        if not failed
        else _Fact(c.FAILED, True, s.lastErrorReason, _failure(pool, s), verdict),
        _Fact(c.DEGRADED, False, "Healthy")
        if not degraded
        else _Fact(c.DEGRADED, True, s.lastErrorReason, s.lastError),
        _Fact(c.RELEASED, True, "NoInstances", "Nothing billed")
        if released
        else _Fact(c.RELEASED, False, s.phase, f"{len(s.instanceIds)} instance(s) recorded"),
    )


def refresh(
    pool: GangNodePool, status: GangNodePoolStatus, *, knobs: Knobs, now: datetime
) -> GangNodePoolStatus:
    """``status`` with every condition current and ``observedGeneration`` set; the very
    same object when nothing changed (most reconciles)."""
    gen = pool.generation
    old = {x.type: x for x in status.conditions}
    facts = _facts(pool, status, knobs)
    ours: dict[str, Condition] = {
        f.type: _condition(f, old.get(f.type), now=now, generation=gen) for f in facts
    }
    merged = sorted({**old, **ours}.values(), key=lambda x: x.type)
    if merged == status.conditions and status.observedGeneration == gen:
        return status
    return update(status, conditions=merged, observedGeneration=gen)


def _condition(fact: _Fact, old: Condition | None, *, now: datetime, generation: int) -> Condition:
    """The condition for ``fact``: ``old`` itself if it already says that."""
    value: Literal["True", "False"] = "True" if fact.true else "False"
    message = fact.message[:MAX_MESSAGE]
    said = (value, fact.reason, message, generation, fact.check_state)
    if old is not None and (
        (old.status, old.reason, old.message, old.observedGeneration, old.checkState) == said
    ):
        return old
    since = old.lastTransitionTime if old is not None and old.status == value else now
    return Condition(
        type=fact.type,
        status=value,
        reason=fact.reason,
        message=message,
        lastTransitionTime=since,
        observedGeneration=generation,
        checkState=fact.check_state,
    ).keeping_unknown_of(old)

"""What the user reads in ``kubectl describe workload``: where the gang stands."""

from __future__ import annotations

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.pool.model import Knobs, shape_text
from atomic_gang_provisioner.pool.phases.acquiring import PERMANENT_REASONS


def _when(pool: GangNodePool) -> str:
    deadline = pool.status.joinDeadline
    return deadline.strftime("%H:%M:%SZ") if deadline else "?"


def progress(pool: GangNodePool, knobs: Knobs) -> str:
    """A Pending message for the pool's current phase."""
    s = pool.status
    shape = shape_text(pool)
    n = pool.spec.shape.count
    attempts = f"attempt {s.consecutiveShortfalls}/{knobs.attempts_before_retry}"
    if s.phase in ("Idle", "Acquiring") and s.lastErrorReason and s.consecutiveShortfalls:
        return (
            f"Acquiring {shape} ({attempts}): {s.lastErrorReason}: {s.lastError}; "
            "holding quota, nothing billed"
        )
    if s.phase in ("Idle", "Acquiring"):
        return f"Acquiring {shape}; holding quota, nothing billed yet"
    if s.phase == "Joining":
        return (
            f"Launched {n}×{pool.spec.shape.instanceType} (group {s.activeGroup}); "
            f"{s.readyCount}/{n} nodes Ready; join deadline {_when(pool)}"
        )
    if s.phase == "Releasing":
        why = f" ({s.lastErrorReason}: {s.lastError})" if s.lastErrorReason else ""
        return f"Releasing the previous node set{why}; a fresh gang follows"
    if s.phase == "KeepWarm":
        return f"Reusing the warm set of group {s.activeGroup}"
    if s.phase == "Satisfied":
        return f"{s.readyCount}/{n} nodes of group {s.activeGroup} Ready"
    return f"Pool phase {s.phase}"


def gave_up(pool: GangNodePool, knobs: Knobs) -> str:
    s = pool.status
    if s.lastErrorReason in PERMANENT_REASONS:
        return (
            f"Cannot acquire {shape_text(pool)}: {s.lastError}. Retrying will not help until "
            "this is fixed; releasing quota (nothing was billed)"
        )
    return (
        f"Gave up after {s.consecutiveShortfalls} consecutive failed attempts to acquire "
        f"{shape_text(pool)} (last: {s.lastErrorReason}: {s.lastError}); releasing quota so "
        "Kueue can requeue (nothing was billed)"
    )


def ready(pool: GangNodePool) -> str:
    s = pool.status
    return (
        f"{s.readyCount}/{pool.spec.shape.count} nodes of group {s.activeGroup} are Ready; "
        "pods are pinned to them"
    )

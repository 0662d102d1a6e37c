"""The pool's status contract: the conditions the pool reconciler reports, and all the
Workload reconciler reads of a pool's status.

As Kueue's provisioning admission check reads a ProvisioningRequest only through its
conditions, the Workload side reads a GangNodePool's status only through
:func:`for_claim` and :func:`holds_nothing`: the conditions below, plus ``claimKey``
(which claim they speak for) and ``activeGroup`` (the node selector of a Ready gang).
A new reason (a capacity block not started yet, a placement group that cannot be
honoured) is a change on the pool side only. docs/design.md tells the same story.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from atomic_gang_provisioner.api.gang_node_pool import (
    Condition,
    GangNodePool,
    GangNodePoolStatus,
    PoolShape,
)

ConditionType = Literal["Ready", "CapacityShortfall", "Failed", "Degraded", "Released"]
CheckVerdict = Literal["Retry", "Rejected"]

READY: Final = "Ready"
CAPACITY_SHORTFALL: Final = "CapacityShortfall"
FAILED: Final = "Failed"
DEGRADED: Final = "Degraded"
RELEASED: Final = "Released"

# What each condition says when True; the CRD and docs/design.md show these words.
MEANING: Final[dict[ConditionType, str]] = {
    READY: (
        "the claim's gang is formed: N Ready nodes of activeGroup (Kueue's ProvisioningRequest "
        "calls it Provisioned). It stays True through a repair (reason Repairing: broken "
        "nodes are being replaced in place, the message names them). While False, reason "
        "and message say where the gang stands, in the words the claimant's AdmissionCheck "
        "shows"
    ),
    CAPACITY_SHORTFALL: (
        "the claim's last attempt fell short (InsufficientCapacity, QuotaExceeded, "
        "JoinTimeout, or TopologySpread: the gang spanned more network nodes than max-spread "
        "allows); the message names the attempt (of acquireAttemptsBeforeRetry), "
        "consecutiveShortfalls counts them. Nothing is billed"
    ),
    FAILED: (
        "the pool gave up on the claim: attempts exhausted, or a reason retrying cannot fix; "
        "checkState says what the claimant's AdmissionCheck becomes (Retry or Rejected)"
    ),
    DEGRADED: (
        "the claim's formed gang broke and cannot be repaired in place (a repair limit, the "
        "claim opted out with repair: never), or its Capacity Block reached its drain point "
        "(reason CapacityBlockEnding); the whole set is released and the claimant gets Retry, "
        "so Kueue requeues it for a fresh gang"
    ),
    RELEASED: "the pool holds no instances: nothing bills, and the next claimant may redefine it",
}


def condition(status: GangNodePoolStatus, type_: ConditionType) -> Condition | None:
    return next((c for c in status.conditions if c.type == type_), None)


def _true(status: GangNodePoolStatus, type_: ConditionType) -> Condition | None:
    found = condition(status, type_)
    return found if found is not None and found.status == "True" else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimReport:
    """What a pool's status says to one claim."""

    ready: str  # Ready=True, for this claim, at the pool's current generation: its message
    failed: Condition | None  # Failed=True likewise (its checkState is set)
    degraded: Condition | None  # Degraded=True for this claim (of any generation)
    progress: str  # where things stand: Ready's message
    holds_nothing: bool  # of the pool: Released=True (or not reported yet)


def for_claim(pool: GangNodePool, claim_key: str) -> ClaimReport:
    status = pool.status
    ours = bool(claim_key) and status.claimKey == claim_key

    def current(type_: ConditionType) -> Condition | None:
        found = _true(status, type_)
        return found if ours and found and found.observedGeneration == pool.generation else None

    failed = current(FAILED)
    return ClaimReport(
        ready=ready.message if (ready := current(READY)) is not None else "",
        failed=failed if failed is not None and failed.checkState is not None else None,
        degraded=_true(status, DEGRADED) if ours else None,
        # Until the pool speaks for this claim, its words are the previous claimant's.
        progress=progress(pool) if ours else acquiring(pool.spec.shape),
        holds_nothing=holds_nothing(pool),
    )


def holds_nothing(pool: GangNodePool) -> bool:
    """Released=True, or a status the pool reconciler has not written yet (a pool the
    Workload side just created: only the pool reconciler records instances)."""
    return not pool.status.conditions or _true(pool.status, RELEASED) is not None


def acquiring(shape: PoolShape) -> str:
    """The message of a claim whose acquisition has not failed yet."""
    return f"Acquiring {shape.summary}; holding quota, nothing billed yet"


def progress(pool: GangNodePool) -> str:
    """Where the gang stands, for the claimant: a pool holding nothing acquires for it."""
    ready = condition(pool.status, READY)
    if holds_nothing(pool) or ready is None:
        return acquiring(pool.spec.shape)
    return ready.message

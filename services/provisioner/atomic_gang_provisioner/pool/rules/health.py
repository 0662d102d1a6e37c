"""Shared health rule for a formed gang (Satisfied or KeepWarm).

A missing Node, or a Node newly seen NotReady, triggers one describe: an
instance that is gone, terminated, stopping or stopped is a loss at once. A
NotReady (or missing) Node of a healthy instance is tolerated for ``health_grace``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool.model import (
    Describe,
    Observed,
    Plan,
    dead_instances,
    health,
    update,
)


@dataclass(frozen=True, slots=True)
class Verdict:
    status: GangNodePoolStatus
    describe: bool = False
    lost: FailureReason | None = None  # why the gang is lost: INSTANCE_LOST | NODE_NOT_READY
    message: str = ""
    wait: float | None = None


class OnLoss(Protocol):
    """What a phase does with a lost gang (releasing.begin, degraded.enter)."""

    def __call__(
        self,
        pool: GangNodePool,
        status: GangNodePoolStatus,
        /,
        *,
        reason: FailureReason,
        message: str,
    ) -> Plan: ...


def forced(pool: GangNodePool, verdict: Verdict, *, on_loss: OnLoss) -> Plan | None:
    """What the gang's health demands before anything else: one describe, or the loss
    (released or degraded, as the phase says); None when the phase may go on."""
    if verdict.describe:
        return Plan(status=verdict.status, read=Describe())
    if verdict.lost is not None:
        return on_loss(pool, verdict.status, reason=verdict.lost, message=verdict.message)
    return None


def check(pool: GangNodePool, observed: Observed, now: datetime) -> Verdict:
    status = pool.status
    h = health(pool, observed)
    status = update(status, readyCount=h.ready)
    if h.ready == len(status.instanceIds):
        return Verdict(update(status, unhealthySince=None))
    newly_not_ready = h.not_ready and status.unhealthySince is None
    if (h.missing or newly_not_ready) and observed.instances is None:
        return Verdict(status, describe=True)
    dead = dead_instances(pool, observed) if observed.instances is not None else ()
    if dead:
        return Verdict(
            status,
            lost=FailureReason.INSTANCE_LOST,
            message=f"Instance(s) {' '.join(dead)} gone, terminated or stopped",
        )
    since = status.unhealthySince or now
    grace = observed.knobs.health_grace
    if now - since >= grace:
        bad = (*h.missing, *h.not_ready, *h.wrong_group)
        return Verdict(
            status,
            lost=FailureReason.NODE_NOT_READY,
            message=(f"Node(s) of {' '.join(bad)} not Ready for {grace.total_seconds():.0f}s"),
        )
    remaining = (since + grace - now).total_seconds()
    return Verdict(update(status, unhealthySince=since), wait=remaining)

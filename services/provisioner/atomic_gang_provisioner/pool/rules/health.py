"""Shared health rule for a formed gang (Satisfied or KeepWarm).

A missing Node, or a Node newly seen NotReady, triggers one describe: an
instance that is gone, terminated, stopping or stopped is a loss at once. A
NotReady (or missing) Node of a healthy instance is tolerated for ``health_grace``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool.model import Observed, dead_instances, health, update
from atomic_gang_provisioner.pool.story import Describe, Part, ask


@dataclass(frozen=True, slots=True)
class Verdict:
    status: GangNodePoolStatus
    lost: FailureReason | None = None  # why the gang is lost: INSTANCE_LOST | NODE_NOT_READY
    message: str = ""
    wait: float | None = None  # seconds the grace of a NotReady Node has left


def check(pool: GangNodePool, observed: Observed, now: datetime) -> Part[Verdict]:
    status = pool.status
    h = health(pool, observed)
    status = update(status, readyCount=h.ready)
    if h.ready == len(status.instanceIds):
        return Verdict(update(status, unhealthySince=None))
    newly_not_ready = h.not_ready and status.unhealthySince is None
    if h.missing or newly_not_ready:
        described = yield from ask(Describe(tuple(status.instanceIds)))
        if dead := dead_instances(pool, described):
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

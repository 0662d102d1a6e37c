"""Step a pool through a write-ahead transition the way the reconciler does."""

from __future__ import annotations

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.model import Observed, Plan
from tests.support.pools import T0, observed


def stored(p: GangNodePool, plan: Plan) -> GangNodePool:
    """The pool as the next reconcile reads it once ``plan``'s status is persisted."""
    return p.model_copy(update={"status": plan.status})


def released_after_write_ahead(
    p: GangNodePool, plan: Plan, obs: Observed | None = None
) -> tuple[GangNodePool, Plan]:
    """A phase change that must terminate persists first; the next reconcile terminates."""
    assert plan.release is None  # write-ahead: status first, no TerminateInstances yet
    assert plan.requeue_after == machine.WRITE_AHEAD_REQUEUE
    p = stored(p, plan)
    nxt = machine.decide(p, obs or observed(), T0)
    assert nxt.status.phase == plan.status.phase
    assert nxt.release is not None
    assert nxt.events == ()  # the transition's event was emitted with the write-ahead
    return p, nxt

"""Step a pool through a write-ahead transition the way the reconciler does."""

from __future__ import annotations

from dataclasses import replace

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.cloud.values import ReleaseResult
from atomic_gang_provisioner.pool.driver import WRITE_AHEAD_REQUEUE, Decision
from atomic_gang_provisioner.pool.story import Terminate
from tests.support.pools import T0, World, decide, observed, release_asked


def stored(p: GangNodePool, decision: Decision) -> GangNodePool:
    """The pool as the next reconcile reads it once ``decision``'s status is persisted."""
    return p.model_copy(update={"status": decision.status})


def released_after_write_ahead(
    p: GangNodePool, decision: Decision, world: World | None = None
) -> tuple[GangNodePool, Decision]:
    """A phase change that must terminate persists first; the next reconcile terminates.
    Returns the stored pool and the next reconcile's decision, which asks the release."""
    assert release_asked(decision) is None  # write-ahead: status first, no TerminateInstances yet
    assert isinstance(decision.waiting_on, Terminate)
    assert decision.requeue_after == WRITE_AHEAD_REQUEUE
    p = stored(p, decision)
    world = world or observed()
    nxt = decide(p, world, T0)
    assert nxt.status.phase == decision.status.phase
    request = release_asked(nxt)
    assert request is not None
    # The transition's event was emitted with the write-ahead: the release tells no other.
    done = decide(p, replace(world, release=ReleaseResult(terminated=request.instance_ids)), T0)
    assert [e.reason for e in done.events if e.reason != "Released"] == []
    return p, nxt

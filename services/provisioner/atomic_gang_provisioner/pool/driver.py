"""The driver: runs a pool's story to the decision the reconcile writes.

It answers each ask through the reconciler's ``answer`` (a read, a cloud call), keeps
the effects and outcomes told on the way, and stops in one of three places:

- the story ended: the decision writes its status, with the conditions refreshed once;
- a cloud call whose status is not stored yet (write-ahead): the decision writes that status
  and the outcomes told so far, and the next reconcile, reading it back, makes the call
  (a crash after EC2 answered always leaves a status that finds the set);
- a read that is out (``answer`` said :data:`PARKED`): nothing is written; the answer
  requeues the pool, whose next reconcile tells the story again and finds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.events import Event
from atomic_gang_provisioner.pool import report
from atomic_gang_provisioner.pool.model import Knobs
from atomic_gang_provisioner.pool.outcomes import Metric, Outcome
from atomic_gang_provisioner.pool.story import (
    Ask,
    CloudCall,
    Effect,
    End,
    LabelNodes,
    Part,
    TagInstances,
    TaintNodes,
)

PARKED: Final = object()  # ``answer``'s word for a read that is still out
WRITE_AHEAD_REQUEUE: Final = 0.01  # the call follows its stored status at once
Answer = Callable[[Ask[Any]], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What a reconcile writes and does after its story: the status (conditions current;
    the stored one when nothing changed), the effects to apply first, the outcomes to
    announce, and when to look again. ``waiting_on``: the ask whose answer is out
    (``parked``: nothing to write) or the cloud call held until its status is stored."""

    status: GangNodePoolStatus
    effects: tuple[Effect, ...] = ()
    outcomes: tuple[Outcome, ...] = ()
    requeue_after: float | None = None
    remove_finalizer: bool = False
    waiting_on: Ask[Any] | None = None
    parked: bool = False

    @property
    def events(self) -> tuple[Event, ...]:
        """The Events the outcomes are announced by, in order."""
        said = (o.announce().event for o in self.outcomes)
        return tuple(e for e in said if e is not None)

    @property
    def metrics(self) -> tuple[Metric, ...]:
        """The metrics the outcomes count, in order."""
        return tuple(m for o in self.outcomes for m in o.announce().metrics)

    @property
    def labels(self) -> tuple[LabelNodes, ...]:
        return tuple(e for e in self.effects if isinstance(e, LabelNodes))

    @property
    def tags(self) -> tuple[TagInstances, ...]:
        return tuple(e for e in self.effects if isinstance(e, TagInstances))

    @property
    def taints(self) -> tuple[str, ...]:
        """The Nodes this decision taints as broken."""
        return tuple(n for e in self.effects if isinstance(e, TaintNodes) for n in e.nodes)


def drive(
    pool: GangNodePool, story: Part[End], answer: Answer, *, now: datetime, knobs: Knobs
) -> Decision:
    """Tell ``story`` of the stored ``pool`` to its decision (see the module doc)."""
    effects: list[Effect] = []
    told: list[Outcome] = []
    reply: object = None
    while True:
        try:
            step = story.send(reply)
        except StopIteration as stop:
            end: End = stop.value
            decision = Decision(
                status=end.status,
                effects=tuple(effects),
                outcomes=tuple(told),
                requeue_after=end.requeue_after,
                remove_finalizer=end.remove_finalizer,
            )
            return _reported(pool, decision, now=now, knobs=knobs)
        reply = None
        if isinstance(step, TagInstances | LabelNodes | TaintNodes):
            effects.append(step)
        elif not isinstance(step, Ask):
            told.append(step)
        elif isinstance(step, CloudCall) and step.status.phase != pool.status.phase:
            story.close()
            held = Decision(
                status=step.status,
                effects=tuple(effects),
                outcomes=tuple(told),
                requeue_after=WRITE_AHEAD_REQUEUE,
                waiting_on=step,
            )
            return _reported(pool, held, now=now, knobs=knobs)
        else:
            reply = answer(step)
            if reply is PARKED:
                story.close()
                return Decision(status=pool.status, waiting_on=step, parked=True)


def _reported(pool: GangNodePool, decision: Decision, *, now: datetime, knobs: Knobs) -> Decision:
    """``decision`` with its status's conditions current (``report.refresh``)."""
    status = report.refresh(pool, decision.status, knobs=knobs, now=now)
    if status is decision.status:
        return decision
    return Decision(
        status=status,
        effects=decision.effects,
        outcomes=decision.outcomes,
        requeue_after=decision.requeue_after,
        remove_finalizer=decision.remove_finalizer,
        waiting_on=decision.waiting_on,
        parked=decision.parked,
    )

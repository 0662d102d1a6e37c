"""The driver: a story's asks answered in order, a read that is out parks the decision with
nothing to write, a cloud call waits for its status to be stored, and the conditions are
refreshed once, on the decision's status."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from atomic_gang_provisioner.api import GangNodePool, conditions
from atomic_gang_provisioner.cloud.values import ReleaseRequest, ReleaseResult
from atomic_gang_provisioner.pool import machine, outcomes
from atomic_gang_provisioner.pool.driver import PARKED, WRITE_AHEAD_REQUEUE, drive
from atomic_gang_provisioner.pool.model import update, with_status
from atomic_gang_provisioner.pool.story import (
    Ask,
    Describe,
    End,
    LabelNodes,
    Next,
    NodeLabels,
    Part,
    Story,
    TagInstances,
    Terminate,
    ask,
)
from tests.support.pools import IDS, KNOBS, T0, instances, launched, observed

RELEASE = ReleaseRequest(instance_ids=tuple(IDS))


def told(p: GangNodePool, answers: dict[type, object]) -> tuple[Any, list[Ask[Any]]]:
    """A story of ``p`` that asks a describe and, in Releasing, a terminate: the decision and
    every ask the driver put to ``answers``."""
    asked: list[Ask[Any]] = []

    def story() -> Part[End]:
        yield TagInstances(instance_ids=tuple(IDS), tags=(("k", "v"),))
        yield outcomes.Finalizing(instances=4)
        described = yield from ask(Describe(tuple(IDS)))
        assert described == instances()
        releasing = update(p.status, phase="Releasing")
        result = yield from ask(Terminate(RELEASE, releasing))
        assert result.done
        yield outcomes.Released(instances=4)
        return End(status=update(releasing, phase="Idle", instanceIds=[]), requeue_after=3.0)

    def answer(question: Ask[Any]) -> object:
        asked.append(question)
        return answers.get(type(question), PARKED)

    return drive(p, story(), answer, now=T0, knobs=KNOBS), asked


def test_a_story_told_to_its_end_writes_its_status_effects_and_outcomes() -> None:
    p = launched(phase="Releasing")
    decision, asked = told(p, {Describe: instances(), Terminate: ReleaseResult()})
    assert [type(a) for a in asked] == [Describe, Terminate]
    assert (decision.status.phase, decision.requeue_after, decision.parked) == ("Idle", 3.0, False)
    assert [type(o) for o in decision.outcomes] == [outcomes.Finalizing, outcomes.Released]
    assert decision.tags == (TagInstances(instance_ids=tuple(IDS), tags=(("k", "v"),)),)
    assert {c.type for c in decision.status.conditions} == set(conditions.MEANING)


def test_a_read_that_is_out_parks_the_turn_with_nothing_to_write() -> None:
    p = launched(phase="Releasing")
    decision, asked = told(p, {})
    assert [type(a) for a in asked] == [Describe]
    assert decision.parked
    assert isinstance(decision.waiting_on, Describe)
    assert decision.status is p.status  # unchanged: the reconciler writes nothing
    assert (decision.outcomes, decision.effects, decision.requeue_after) == ((), (), None)


def test_a_call_whose_status_is_not_stored_waits_for_the_write_ahead() -> None:
    p = launched()  # stored Joining; the story terminates from Releasing
    decision, asked = told(p, {Describe: instances(), Terminate: ReleaseResult()})
    assert [type(a) for a in asked] == [Describe]  # the terminate is not made
    assert isinstance(decision.waiting_on, Terminate)
    assert not decision.parked
    assert decision.status.phase == "Releasing"
    assert decision.requeue_after == WRITE_AHEAD_REQUEUE
    # What was told before the call is written with it, and said once.
    assert [type(o) for o in decision.outcomes] == [outcomes.Finalizing]
    assert len(decision.tags) == 1


def test_labels_wait_in_the_turn_until_the_story_ends() -> None:
    labels = (NodeLabels(node="ip-1", labels=(("a", "b"),)),)

    def story() -> Part[End]:
        yield LabelNodes(labels)
        return End(status=launched().status)

    decision = drive(launched(), story(), lambda _: PARKED, now=T0, knobs=KNOBS)
    assert decision.labels == (LabelNodes(labels),)


def test_a_story_that_goes_on_into_a_phase_it_ran_is_a_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def back_to_joining(p: GangNodePool, *_: Any) -> Story:
        yield from ()  # a story that asks and tells nothing
        return Next(update(p.status, phase="Joining"))

    def on_to_satisfied(p: GangNodePool, *_: Any) -> Story:
        yield from ()
        return Next(update(p.status, phase="Satisfied"))

    monkeypatch.setitem(machine.PHASES, "Joining", on_to_satisfied)
    monkeypatch.setitem(machine.PHASES, "Satisfied", back_to_joining)
    p = launched()
    story = machine.story(p, observed().observed(), T0 + timedelta(seconds=1))
    with pytest.raises(machine.PhaseLoopError, match="Joining → Satisfied → Joining"):
        drive(p, story, lambda _: PARKED, now=T0, knobs=KNOBS)


def test_a_story_goes_on_in_the_next_phase_in_the_same_reconcile() -> None:
    p = with_status(launched(), update(launched().status, phase="Idle", instanceIds=[]))
    decision = drive(
        p, machine.story(p, observed().observed(), T0), lambda _: PARKED, now=T0, knobs=KNOBS
    )
    # Idle with a claim goes on acquiring: the launch waits for Acquiring to be stored.
    assert decision.status.phase == "Acquiring"
    assert decision.requeue_after == WRITE_AHEAD_REQUEUE

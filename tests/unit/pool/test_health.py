"""Health of a formed gang: a stopped or stopping member is a loss at once,
although it is still live for cleanup and the reaper."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from atomic_gang_provisioner.cloud.values import Instance
from atomic_gang_provisioner.pool.story import Describe
from tests.support.pools import IDS, T0, decide, instances, launched, nodes, observed, release_asked
from tests.unit.pool.writeahead import released_after_write_ahead


def _stopped(state: str) -> tuple[Instance, ...]:
    running = instances()
    return (replace(running[0], state=state), *running[1:])


@pytest.mark.parametrize(
    "state",
    [pytest.param("stopped", id="stopped"), pytest.param("stopping", id="stopping")],
)
def test_stopped_instance_breaks_its_node_at_once(state: str) -> None:
    assert _stopped(state)[0].live  # still live for cleanup and the reaper...
    assert not _stopped(state)[0].healthy  # ...but no longer a gang member
    p = launched(phase="Satisfied")
    views = (nodes(4, ready=False)[0], *nodes(4)[1:])  # its kubelet went away
    first = decide(p, observed(views), T0)
    assert first.parked
    assert first.waiting_on == Describe(tuple(IDS))
    decision = decide(p, observed(views, _stopped(state)), T0)
    assert decision.status.phase == "Repairing"
    repair = decision.status.repair
    assert repair is not None
    assert [(b.instanceId, b.reason) for b in repair.broken] == [(IDS[0], "InstanceLost")]
    assert "stopped" in repair.broken[0].detail
    assert decision.taints == ("ip-10-0-0-0",)


@pytest.mark.parametrize(
    "state",
    [pytest.param("stopped", id="stopped"), pytest.param("stopping", id="stopping")],
)
def test_stopped_instance_degrades_a_gang_that_opted_out_of_repair(state: str) -> None:
    p = launched(phase="Satisfied", repair="never")
    views = (nodes(4, ready=False)[0], *nodes(4)[1:])
    decision = decide(p, observed(views, _stopped(state)), T0)
    assert decision.status.phase == "Degraded"
    assert decision.status.lastErrorReason == "InstanceLost"
    assert IDS[0] in decision.status.lastError
    assert "stopped" in decision.status.lastError


def test_stopped_instance_of_a_warm_set_releases_it() -> None:
    p = launched(phase="KeepWarm", claimKey="", keepWarmUntil=T0 + timedelta(minutes=5))
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})})
    views = (nodes(4, ready=False)[0], *nodes(4)[1:])
    decision = decide(p, observed(views, _stopped("stopped")), T0)
    assert decision.status.phase == "Releasing"
    assert decision.status.lastErrorReason == "InstanceLost"
    _, release = released_after_write_ahead(p, decision, observed(views, _stopped("stopped")))
    asked = release_asked(release)
    assert asked is not None
    assert asked.instance_ids == tuple(IDS)  # the stopped one is terminated too


def test_stopped_instance_while_joining_releases_the_set() -> None:
    decision = decide(launched(), observed(nodes(4), _stopped("stopped")), T0)
    assert decision.status.phase == "Releasing"
    assert decision.status.lastErrorReason == "InstanceLost"

"""The gang's network topology in Joining: read once, recorded, labels, max-spread."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.values import Launched, ReleaseResult, TopologyRead
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.driver import Decision, drive
from atomic_gang_provisioner.pool.model import NodeView
from atomic_gang_provisioner.pool.outcomes import ShortfallCounted, Spread
from atomic_gang_provisioner.pool.story import Ask, ReadTopology, ReadTopologyAhead
from tests.support.pools import (
    IDS,
    KNOBS,
    SHAPE,
    T0,
    World,
    decide,
    instances,
    launch_asked,
    launched,
    nodes,
    observed,
    release_asked,
)
from tests.unit.pool.writeahead import released_after_write_ahead, stored

NOW = T0 + timedelta(seconds=40)
LAYERS = ("nn-top", "nn-mid")


def shaped(p: GangNodePool, **shape: Any) -> GangNodePool:
    spec = p.spec.model_copy(update={"shape": SHAPE.model_copy(update=shape)})
    return p.model_copy(update={"spec": spec})


def read(*bottoms: str) -> TopologyRead:
    """Instance i under bottom-layer node bottoms[i]."""
    pairs = zip(IDS, bottoms, strict=True)
    return TopologyRead(nodes=tuple((iid, (*LAYERS, b)) for iid, b in pairs))


def joined(topology: TopologyRead | None = None, views: tuple[NodeView, ...] = ()) -> World:
    return replace(observed(views or nodes(4), instances()), topology=topology)


def read_ahead(p: GangNodePool, world: World) -> tuple[str, ...]:
    """The ids ``p``'s story reads ahead against ``world`` (none: no read ahead)."""
    asked: list[Ask[Any]] = []

    def answer(question: Ask[Any]) -> object:
        asked.append(question)
        return world.answer(question)

    drive(p, machine.story(p, world.observed(), NOW), answer, now=NOW, knobs=world.knobs)
    ahead = [a.instance_ids for a in asked if isinstance(a, ReadTopologyAhead)]
    assert len(ahead) <= 1
    return ahead[0] if ahead else ()


def labelled(decision: Decision) -> dict[str, dict[str, str]]:
    """The labels the decision adds, by Node."""
    return {n.node: dict(n.labels) for e in decision.labels for n in e.nodes}


def test_unsupported_type_skips_topology_quietly() -> None:
    p = shaped(launched(), instanceType="m5.large")
    decision = decide(p, joined(), NOW)
    assert decision.waiting_on is None  # not even asked: the world here has no answer to one
    assert decision.status.phase == "Satisfied"
    assert (decision.status.networkNodes, decision.status.spread) == (None, 0)
    assert decision.labels == ()


def test_one_read_for_the_gang_once_all_nodes_are_ready() -> None:
    early = decide(launched(), observed(nodes(3), instances()), NOW)
    assert early.waiting_on is None
    decision = decide(launched(), joined(), NOW)
    assert decision.parked
    assert decision.waiting_on == ReadTopology(tuple(IDS))
    assert decision.status.phase == "Joining"


def test_the_read_goes_ahead_once_a_node_is_ready_and_only_fills_the_cache() -> None:
    """While the gang joins, its instances are read ahead (the answer is not waited for
    and not recorded), so the read at N Ready is a cache hit, not a turn of the 1/s budget."""
    assert read_ahead(launched(), observed((), instances())) == ()
    assert read_ahead(launched(), observed(nodes(1), instances())) == tuple(IDS)
    one = decide(launched(), observed(nodes(1), instances()), NOW)
    assert (one.waiting_on, one.status.phase, one.status.networkNodes) == (None, "Joining", None)
    small = shaped(launched(), instanceType="m5.large")
    assert read_ahead(small, observed(nodes(1))) == ()
    known = launched(networkNodes={i: [*LAYERS, "nn-1"] for i in IDS})
    assert read_ahead(known, observed(nodes(1), instances())) == ()


def test_with_the_read_ahead_answered_the_joining_nodes_are_labelled_ahead() -> None:
    """Ready or not, a registered Node gets its layer labels while the gang joins, so
    that at N Ready only the last ones are patched; nothing is recorded yet."""
    answered = replace(observed(nodes(3), instances()), topology=read("b1", "b1", "b2", "b2"))
    decision = decide(launched(), answered, NOW)
    assert decision.status.phase == "Joining"
    assert decision.status.networkNodes is None
    labels = labelled(decision)
    assert sorted(labels) == sorted(v.name for v in nodes(3))
    assert labels[nodes(3)[2].name]["topology.k8s.aws/network-node-layer-3"] == "b2"
    pending = replace(answered, topology=TopologyRead(retry_after=0.9))
    assert decide(launched(), pending, NOW).labels == ()


def test_limiter_without_a_token_waits_and_reads_again() -> None:
    decision = decide(launched(), joined(TopologyRead(retry_after=0.7)), NOW)
    assert decision.status.phase == "Joining"
    assert decision.requeue_after == 0.7
    assert decision.status.networkNodes is None  # not recorded: the next round reads


def test_read_is_recorded_with_spread_labels_and_metric() -> None:
    views = nodes(4)
    cloud_labelled = replace(
        views[0], topology_labels=(("topology.k8s.aws/network-node-layer-1", "nn-top"),)
    )
    decision = decide(
        launched(), joined(read("b1", "b1", "b1", "b1"), (cloud_labelled, *views[1:])), NOW
    )
    s = decision.status
    assert s.phase == "Satisfied"
    assert s.spread == 1
    assert s.networkNodes == {iid: [*LAYERS, "b1"] for iid in IDS}
    labels = labelled(decision)
    layer = "topology.k8s.aws/network-node-layer-{}".format
    assert labels[views[0].name] == {layer(2): "nn-mid", layer(3): "b1"}  # layer 1 was there
    assert labels[views[3].name] == {layer(1): "nn-top", layer(2): "nn-mid", layer(3): "b1"}
    assert [m.nodes for m in decision.metrics if isinstance(m, Spread)] == [1]


def test_nodes_already_labelled_get_no_patch() -> None:
    full = tuple(
        replace(
            v,
            topology_labels=tuple(
                (f"topology.k8s.aws/network-node-layer-{n}", x)
                for n, x in enumerate((*LAYERS, "b1"), 1)
            ),
        )
        for v in nodes(4)
    )
    decision = decide(launched(), joined(read("b1", "b1", "b1", "b1"), full), NOW)
    assert decision.status.phase == "Satisfied"
    assert decision.labels == ()


def test_recorded_topology_is_not_read_again() -> None:
    p = launched(networkNodes={iid: [*LAYERS, "b1"] for iid in IDS}, spread=1)
    decision = decide(p, joined(), NOW)
    assert decision.waiting_on is None  # not asked: the world here has no answer to one
    assert decision.status.phase == "Satisfied"


def test_spread_within_max_spread_is_ready() -> None:
    p = shaped(launched(), maxSpread=2)
    decision = decide(p, joined(read("b1", "b1", "b2", "b2")), NOW)
    assert decision.status.phase == "Satisfied"
    assert decision.status.spread == 2


def test_spread_over_max_spread_releases_the_whole_set_as_a_shortfall() -> None:
    p = shaped(launched(consecutiveShortfalls=1), maxSpread=1)
    decision = decide(p, joined(read("b1", "b1", "b1", "b2")), NOW)
    s = decision.status
    assert s.phase == "Releasing"
    assert (s.lastErrorReason, s.consecutiveShortfalls, s.spread) == ("TopologySpread", 2, 2)
    assert "spans 2 bottom-layer network nodes (b1, b2), more than max-spread 1" in s.lastError
    assert decision.labels == ()  # nothing labelled, never Satisfied
    assert ShortfallCounted("TopologySpread") in decision.metrics
    ready = next(c for c in s.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", "TopologySpread")
    _, release = released_after_write_ahead(p, decision)
    asked = release_asked(release)
    assert asked is not None
    assert asked.instance_ids == tuple(IDS)


def test_spread_gang_released_acquires_again_then_gives_up_after_k_with_retry() -> None:
    p = shaped(launched(), maxSpread=1)
    step = decide(p, joined(read("b1", "b2", "b1", "b2")), NOW)
    for attempt in range(1, KNOBS.attempts_before_retry + 1):
        assert step.status.consecutiveShortfalls == attempt
        p = stored(p, step)  # Releasing, written ahead of the terminate
        gone = decide(p, replace(observed(), release=ReleaseResult()), NOW)
        assert gone.status.phase == "Acquiring"
        assert (gone.status.networkNodes, gone.status.spread) == (None, 0)
        short = next(c for c in gone.status.conditions if c.type == "CapacityShortfall")
        assert (short.status, short.reason) == ("True", "TopologySpread")
        p = stored(p, gone)
        again = decide(p, observed(), NOW)
        if attempt == KNOBS.attempts_before_retry:
            assert launch_asked(again) is None
            failed = next(c for c in again.status.conditions if c.type == "Failed")
            assert (failed.status, failed.checkState) == ("True", "Retry")
            return
        assert launch_asked(again) is not None
        # The relaunch keeps the count: only a Satisfied gang starts it from zero.
        result = Launched(instances=instances("pending"), client_token="t")
        relaunched = decide(p, replace(observed(), launch=result), NOW)
        assert relaunched.status.consecutiveShortfalls == attempt
        p = stored(p, relaunched)
        views = nodes(4, group=relaunched.status.activeGroup)
        step = decide(p, joined(read("b1", "b2", "b1", "b2"), views), NOW)
    raise AssertionError("never gave up")


def test_satisfied_starts_the_attempt_count_from_zero() -> None:
    decision = decide(launched(consecutiveShortfalls=2), joined(read("b1", "b1", "b1", "b1")), NOW)
    assert decision.status.phase == "Satisfied"
    assert decision.status.consecutiveShortfalls == 0


UNREADABLE = TopologyRead(reason=FailureReason.PERMANENT_ERROR, message="UnauthorizedOperation: no")


def test_unreadable_topology_without_max_spread_goes_on_with_a_warning() -> None:
    decision = decide(
        launched(),
        joined(UNREADABLE),
        NOW,
    )
    assert decision.status.phase == "Satisfied"
    assert (decision.status.networkNodes, decision.status.spread) == ({}, 0)
    warned = [e for e in decision.events if e.reason == "TopologyUnavailable"]
    assert len(warned) == 1
    assert "UnauthorizedOperation: no" in warned[0].message
    assert decision.labels == ()


def test_unreadable_topology_with_max_spread_waits_for_it() -> None:
    p = shaped(launched(), maxSpread=1)
    decision = decide(
        p,
        joined(UNREADABLE),
        NOW,
    )
    assert decision.status.phase == "Joining"
    assert decision.status.networkNodes is None  # read again next round
    assert decision.requeue_after == 30.0
    assert decision.status.lastError == "UnauthorizedOperation: no"


def test_a_topology_read_that_works_later_clears_the_error() -> None:
    p = shaped(launched(lastError="UnauthorizedOperation: no"), maxSpread=1)
    decision = decide(p, joined(read("b1", "b1", "b1", "b1")), NOW)
    assert decision.status.phase == "Satisfied"
    assert decision.status.lastError == ""

"""The gang's network topology in Joining: read once, recorded, labels, max-spread."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.types import Launched, ReleaseResult, TopologyRead
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.model import NodeView, Observed, ReadTopology
from atomic_gang_provisioner.pool.outcomes import ShortfallCounted, Spread
from tests.support.pools import IDS, KNOBS, SHAPE, T0, instances, launched, nodes, observed
from tests.unit.pool.writeahead import released_after_write_ahead

NOW = T0 + timedelta(seconds=40)
LAYERS = ("nn-top", "nn-mid")


def shaped(p: GangNodePool, **shape: Any) -> GangNodePool:
    spec = p.spec.model_copy(update={"shape": SHAPE.model_copy(update=shape)})
    return p.model_copy(update={"spec": spec})


def read(*bottoms: str) -> TopologyRead:
    """Instance i under bottom-layer node bottoms[i]."""
    pairs = zip(IDS, bottoms, strict=True)
    return TopologyRead(nodes=tuple((iid, (*LAYERS, b)) for iid, b in pairs))


def joined(topology: TopologyRead | None = None, views: tuple[NodeView, ...] = ()) -> Observed:
    return replace(observed(views or nodes(4), instances()), topology=topology)


def test_unsupported_type_skips_topology_quietly() -> None:
    p = shaped(launched(), instanceType="m5.large")
    plan = machine.decide(p, joined(), NOW)
    assert not isinstance(plan.read, ReadTopology)
    assert plan.status.phase == "Satisfied"
    assert (plan.status.networkNodes, plan.status.spread) == (None, 0)
    assert plan.label_nodes == ()


def test_one_read_for_the_gang_once_all_nodes_are_ready() -> None:
    early = machine.decide(launched(), observed(nodes(3), instances()), NOW)
    assert not isinstance(early.read, ReadTopology)
    plan = machine.decide(launched(), joined(), NOW)
    assert plan.read == ReadTopology(tuple(IDS))
    assert plan.status.phase == "Joining"


def test_the_read_goes_ahead_once_a_node_is_ready_and_only_fills_the_cache() -> None:
    """While the gang joins, its instances are read ahead (the answer is not waited for
    and not recorded), so the read at N Ready is a cache hit, not a turn of the 1/s budget."""
    none_yet = machine.decide(launched(), observed((), instances()), NOW)
    assert none_yet.warm_topology == ()
    one = machine.decide(launched(), observed(nodes(1), instances()), NOW)
    assert one.warm_topology == tuple(IDS)
    assert (one.read, one.status.phase, one.status.networkNodes) == (None, "Joining", None)
    small = machine.decide(shaped(launched(), instanceType="m5.large"), observed(nodes(1)), NOW)
    assert small.warm_topology == ()
    known = launched(networkNodes={i: [*LAYERS, "nn-1"] for i in IDS})
    assert machine.decide(known, observed(nodes(1), instances()), NOW).warm_topology == ()


def test_with_the_read_ahead_answered_the_joining_nodes_are_labelled_ahead() -> None:
    """Ready or not, a registered Node gets its layer labels while the gang joins, so
    that at N Ready only the last ones are patched; nothing is recorded yet."""
    answered = replace(observed(nodes(3), instances()), topology=read("b1", "b1", "b2", "b2"))
    plan = machine.decide(launched(), answered, NOW)
    assert plan.status.phase == "Joining"
    assert plan.status.networkNodes is None
    labelled = {n.node: dict(n.labels) for n in plan.label_nodes}
    assert sorted(labelled) == sorted(v.name for v in nodes(3))
    assert labelled[nodes(3)[2].name]["topology.k8s.aws/network-node-layer-3"] == "b2"
    pending = replace(answered, topology=TopologyRead(retry_after=0.9))
    assert machine.decide(launched(), pending, NOW).label_nodes == ()


def test_limiter_without_a_token_waits_and_reads_again() -> None:
    plan = machine.decide(launched(), joined(TopologyRead(retry_after=0.7)), NOW)
    assert plan.status.phase == "Joining"
    assert plan.requeue_after == 0.7
    assert plan.status.networkNodes is None  # not recorded: the next round reads


def test_read_is_recorded_with_spread_labels_and_metric() -> None:
    views = nodes(4)
    cloud_labelled = replace(
        views[0], topology_labels=(("topology.k8s.aws/network-node-layer-1", "nn-top"),)
    )
    plan = machine.decide(
        launched(), joined(read("b1", "b1", "b1", "b1"), (cloud_labelled, *views[1:])), NOW
    )
    s = plan.status
    assert s.phase == "Satisfied"
    assert s.spread == 1
    assert s.networkNodes == {iid: [*LAYERS, "b1"] for iid in IDS}
    labels = {n.node: dict(n.labels) for n in plan.label_nodes}
    layer = "topology.k8s.aws/network-node-layer-{}".format
    assert labels[views[0].name] == {layer(2): "nn-mid", layer(3): "b1"}  # layer 1 was there
    assert labels[views[3].name] == {layer(1): "nn-top", layer(2): "nn-mid", layer(3): "b1"}
    assert [m.nodes for m in plan.metrics if isinstance(m, Spread)] == [1]


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
    plan = machine.decide(launched(), joined(read("b1", "b1", "b1", "b1"), full), NOW)
    assert plan.status.phase == "Satisfied"
    assert plan.label_nodes == ()


def test_recorded_topology_is_not_read_again() -> None:
    p = launched(networkNodes={iid: [*LAYERS, "b1"] for iid in IDS}, spread=1)
    plan = machine.decide(p, joined(), NOW)
    assert not isinstance(plan.read, ReadTopology)
    assert plan.status.phase == "Satisfied"


def test_spread_within_max_spread_is_ready() -> None:
    p = shaped(launched(), maxSpread=2)
    plan = machine.decide(p, joined(read("b1", "b1", "b2", "b2")), NOW)
    assert plan.status.phase == "Satisfied"
    assert plan.status.spread == 2


def test_spread_over_max_spread_releases_the_whole_set_as_a_shortfall() -> None:
    p = shaped(launched(consecutiveShortfalls=1), maxSpread=1)
    plan = machine.decide(p, joined(read("b1", "b1", "b1", "b2")), NOW)
    s = plan.status
    assert s.phase == "Releasing"
    assert (s.lastErrorReason, s.consecutiveShortfalls, s.spread) == ("TopologySpread", 2, 2)
    assert "spans 2 bottom-layer network nodes (b1, b2), more than max-spread 1" in s.lastError
    assert plan.label_nodes == ()  # nothing labelled, never Satisfied
    assert ShortfallCounted("TopologySpread") in plan.metrics
    ready = next(c for c in s.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", "TopologySpread")
    _, release = released_after_write_ahead(p, plan)
    assert release.release is not None
    assert release.release.instance_ids == tuple(IDS)


def test_spread_gang_released_acquires_again_then_gives_up_after_k_with_retry() -> None:
    p = shaped(launched(), maxSpread=1)
    step = machine.decide(p, joined(read("b1", "b2", "b1", "b2")), NOW)
    for attempt in range(1, KNOBS.attempts_before_retry + 1):
        assert step.status.consecutiveShortfalls == attempt
        gone = machine.after_release(p, step, result=ReleaseResult(), now=NOW, knobs=KNOBS)
        assert gone.status.phase == "Acquiring"
        assert (gone.status.networkNodes, gone.status.spread) == (None, 0)
        short = next(c for c in gone.status.conditions if c.type == "CapacityShortfall")
        assert (short.status, short.reason) == ("True", "TopologySpread")
        again = machine.decide(p.model_copy(update={"status": gone.status}), observed(), NOW)
        if attempt == KNOBS.attempts_before_retry:
            assert again.acquire is None
            failed = next(c for c in again.status.conditions if c.type == "Failed")
            assert (failed.status, failed.checkState) == ("True", "Retry")
            return
        assert again.acquire is not None
        # The relaunch keeps the count: only a Satisfied gang starts it from zero.
        result = Launched(instances=instances("pending"), client_token="t")
        relaunched = machine.after_acquire(
            p, again, request=again.acquire, result=result, now=NOW, knobs=KNOBS
        )
        assert relaunched.status.consecutiveShortfalls == attempt
        p = p.model_copy(update={"status": relaunched.status})
        views = nodes(4, group=relaunched.status.activeGroup)
        step = machine.decide(p, joined(read("b1", "b2", "b1", "b2"), views), NOW)
    raise AssertionError("never gave up")


def test_satisfied_starts_the_attempt_count_from_zero() -> None:
    plan = machine.decide(
        launched(consecutiveShortfalls=2), joined(read("b1", "b1", "b1", "b1")), NOW
    )
    assert plan.status.phase == "Satisfied"
    assert plan.status.consecutiveShortfalls == 0


UNREADABLE = TopologyRead(reason=FailureReason.PERMANENT_ERROR, message="UnauthorizedOperation: no")


def test_unreadable_topology_without_max_spread_goes_on_with_a_warning() -> None:
    plan = machine.decide(
        launched(),
        joined(UNREADABLE),
        NOW,
    )
    assert plan.status.phase == "Satisfied"
    assert (plan.status.networkNodes, plan.status.spread) == ({}, 0)
    warned = [e for e in plan.events if e.reason == "TopologyUnavailable"]
    assert len(warned) == 1
    assert "UnauthorizedOperation: no" in warned[0].message
    assert plan.label_nodes == ()


def test_unreadable_topology_with_max_spread_waits_for_it() -> None:
    p = shaped(launched(), maxSpread=1)
    plan = machine.decide(
        p,
        joined(UNREADABLE),
        NOW,
    )
    assert plan.status.phase == "Joining"
    assert plan.status.networkNodes is None  # read again next round
    assert plan.requeue_after == 30.0
    assert plan.status.lastError == "UnauthorizedOperation: no"


def test_a_topology_read_that_works_later_clears_the_error() -> None:
    p = shaped(launched(lastError="UnauthorizedOperation: no"), maxSpread=1)
    plan = machine.decide(p, joined(read("b1", "b1", "b1", "b1")), NOW)
    assert plan.status.phase == "Satisfied"
    assert plan.status.lastError == ""

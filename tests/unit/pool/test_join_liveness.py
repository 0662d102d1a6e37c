"""The join check's sign of life: Nodes that turned Ready within the window stand for a
describe; anything older, unknown or contradicted by EC2 still asks EC2."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from atomic_gang_provisioner.cloud.values import TopologyRead
from atomic_gang_provisioner.pool.driver import Decision
from atomic_gang_provisioner.pool.model import NodeView
from atomic_gang_provisioner.pool.story import Describe
from tests.support.pools import IDS, KNOBS, T0, World, decide, instances, launched, nodes, observed

NOW = T0 + timedelta(seconds=40)
READ = TopologyRead()  # p4d: its topology read, answered with nothing to label


def seen(views: tuple[NodeView, ...], **kw: object) -> World:
    return replace(observed(views), topology=READ, **kw)  # type: ignore[arg-type]


def asks_ec2(decision: Decision) -> bool:
    """The join check waits on a describe of the whole set."""
    return decision.parked and decision.waiting_on == Describe(tuple(IDS), shared=True)


def test_nodes_ready_within_the_window_need_no_describe() -> None:
    decision = decide(launched(), seen(nodes(4, since=NOW - timedelta(seconds=3))), NOW)
    assert decision.waiting_on is None  # not even asked: the world here has no answer to one
    assert decision.status.phase == "Satisfied"


def test_the_window_edge_is_inclusive_and_one_second_past_asks_ec2() -> None:
    window = KNOBS.liveness_window
    at_edge = decide(launched(), seen(nodes(4, since=NOW - window)), NOW)
    assert at_edge.status.phase == "Satisfied"
    past = nodes(4, since=NOW - window - timedelta(seconds=1))
    decision = decide(launched(), seen(past), NOW)
    assert (asks_ec2(decision), decision.status.phase) == (True, "Joining")


def test_one_stale_node_makes_the_whole_set_ask_ec2() -> None:
    fresh = nodes(4, since=NOW - timedelta(seconds=2))
    stale = (*fresh[:3], replace(fresh[3], ready_since=NOW - timedelta(seconds=30)))
    assert asks_ec2(decide(launched(), seen(stale), NOW))


def test_a_node_without_a_transition_time_asks_ec2() -> None:
    assert asks_ec2(decide(launched(), seen(nodes(4, since=None)), NOW))


def test_a_kubelet_clock_a_little_ahead_vouches_far_ahead_does_not() -> None:
    ahead = decide(launched(), seen(nodes(4, since=NOW + timedelta(seconds=2))), NOW)
    assert ahead.status.phase == "Satisfied"
    far = decide(launched(), seen(nodes(4, since=NOW + timedelta(minutes=5))), NOW)
    assert asks_ec2(far)


def test_an_instance_ec2_called_unhealthy_is_described_and_the_set_released() -> None:
    views = nodes(4, since=NOW - timedelta(seconds=1))
    first = decide(launched(), seen(views, reported_unhealthy=(IDS[2],)), NOW)
    assert asks_ec2(first)
    described = seen(views, reported_unhealthy=(IDS[0],), instances=instances(dead=1))
    second = decide(launched(), described, NOW)
    assert second.status.phase == "Releasing"
    assert second.status.lastErrorReason == "InstanceLost"


def test_a_zero_window_asks_ec2_for_every_gang() -> None:
    views = nodes(4, since=NOW)
    zero = replace(seen(views), knobs=replace(KNOBS, liveness_window=timedelta(0)))
    assert asks_ec2(decide(launched(), zero, NOW))


def test_fewer_than_n_ready_never_vouches() -> None:
    decision = decide(launched(), seen(nodes(3, since=NOW)), NOW)
    assert (decision.waiting_on, decision.status.phase) == (None, "Joining")

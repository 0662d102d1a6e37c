"""The join check's sign of life: Nodes that turned Ready within the window stand for a
describe; anything older, unknown or contradicted by EC2 still asks EC2."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from atomic_gang_provisioner.cloud.types import TopologyRead
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.model import Describe, NodeView, Observed
from tests.support.pools import IDS, KNOBS, T0, instances, launched, nodes, observed

NOW = T0 + timedelta(seconds=40)
READ = TopologyRead()  # p4d: its topology read, answered with nothing to label


def seen(views: tuple[NodeView, ...], **kw: object) -> Observed:
    return replace(observed(views), topology=READ, **kw)  # type: ignore[arg-type]


def test_nodes_ready_within_the_window_need_no_describe() -> None:
    plan = machine.decide(launched(), seen(nodes(4, since=NOW - timedelta(seconds=3))), NOW)
    assert not isinstance(plan.read, Describe)
    assert plan.status.phase == "Satisfied"


def test_the_window_edge_is_inclusive_and_one_second_past_asks_ec2() -> None:
    window = KNOBS.liveness_window
    at_edge = machine.decide(launched(), seen(nodes(4, since=NOW - window)), NOW)
    assert at_edge.status.phase == "Satisfied"
    past = nodes(4, since=NOW - window - timedelta(seconds=1))
    plan = machine.decide(launched(), seen(past), NOW)
    assert (plan.read, plan.status.phase) == (Describe(shared=True), "Joining")


def test_one_stale_node_makes_the_whole_set_ask_ec2() -> None:
    fresh = nodes(4, since=NOW - timedelta(seconds=2))
    stale = (*fresh[:3], replace(fresh[3], ready_since=NOW - timedelta(seconds=30)))
    assert isinstance(machine.decide(launched(), seen(stale), NOW).read, Describe)


def test_a_node_without_a_transition_time_asks_ec2() -> None:
    assert isinstance(machine.decide(launched(), seen(nodes(4, since=None)), NOW).read, Describe)


def test_a_kubelet_clock_a_little_ahead_vouches_far_ahead_does_not() -> None:
    ahead = machine.decide(launched(), seen(nodes(4, since=NOW + timedelta(seconds=2))), NOW)
    assert ahead.status.phase == "Satisfied"
    far = machine.decide(launched(), seen(nodes(4, since=NOW + timedelta(minutes=5))), NOW)
    assert isinstance(far.read, Describe)


def test_an_instance_ec2_called_unhealthy_is_described_and_the_set_released() -> None:
    views = nodes(4, since=NOW - timedelta(seconds=1))
    first = machine.decide(launched(), seen(views, reported_unhealthy=(IDS[2],)), NOW)
    assert isinstance(first.read, Describe)
    described = seen(views, reported_unhealthy=(IDS[0],), instances=instances(dead=1))
    second = machine.decide(launched(), described, NOW)
    assert second.status.phase == "Releasing"
    assert second.status.lastErrorReason == "InstanceLost"


def test_a_zero_window_asks_ec2_for_every_gang() -> None:
    views = nodes(4, since=NOW)
    zero = replace(seen(views), knobs=replace(KNOBS, liveness_window=timedelta(0)))
    assert isinstance(machine.decide(launched(), zero, NOW).read, Describe)


def test_fewer_than_n_ready_never_vouches() -> None:
    plan = machine.decide(launched(), seen(nodes(3, since=NOW)), NOW)
    assert (isinstance(plan.read, Describe), plan.status.phase) == (False, "Joining")

"""The shared fakes keep their word: FakeCloud's defaults, scripted answers, capacity
and call capture, and ManualClock as the EC2 engine's clocks."""

from __future__ import annotations

from concurrent.futures import Future
from datetime import timedelta

import pytest

from atomic_gang import GangSpec, GoDuration
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.roles import Cloud
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    Launched,
    PlacementGroup,
    ReleaseRequest,
    ReleaseResult,
    RetryLater,
    Shortfall,
)
from tests.support.clock import ManualClock
from tests.support.fakecloud import FakeCloud
from tests.support.pools import T0, instances


def request(pool: str = "train", *, count: int = 4, generation: int = 1) -> AcquireRequest:
    spec = GangSpec(
        pool=pool,
        count=count,
        instance_type="p4d.24xlarge",
        mode="runinstances",
        region="us-east-1",
        node_role_arn="arn:aws:iam::123456789012:role/node",
        keep_warm_ttl=GoDuration.of(minutes=10),
        max_lifetime=GoDuration.of(hours=4),
        ami_variant="nvidia",
    )
    return AcquireRequest(spec=spec, generation=generation)


def test_it_is_every_cloud_role() -> None:
    cloud: Cloud = FakeCloud()
    cloud.warm_up()


def test_a_launch_runs_the_gang_and_the_same_generation_adopts_it() -> None:
    cloud = FakeCloud()
    first = cloud.acquire(request())
    assert isinstance(first, Launched)
    assert len(first.instances) == 4
    assert {(i.pool, i.generation, i.state) for i in first.instances} == {("train", 1, "running")}
    again = cloud.acquire(request())
    assert isinstance(again, Launched)
    assert again.adopted
    assert again.instance_ids == first.instance_ids
    assert cloud.find(pool="train", generation=1) == first.instances
    assert cloud.describe_later([*first.instance_ids, "i-unknown"]).result() == first.instances
    assert cloud.list_owned() == first.instances
    assert cloud.release(ReleaseRequest(instance_ids=first.instance_ids)).done
    assert cloud.list_owned() == ()
    assert cloud.reported_unhealthy(first.instance_ids) == first.instance_ids


def test_a_launch_past_the_capacity_of_its_type_is_a_shortfall() -> None:
    cloud = FakeCloud(capacity={"p4d.24xlarge": 6})
    assert isinstance(cloud.acquire(request("a")), Launched)
    short = cloud.acquire(request("b", count=3))
    assert isinstance(short, Shortfall)
    assert [a.code for a in short.attempts] == ["InsufficientInstanceCapacity"]
    assert isinstance(cloud.acquire(request("c", count=2)), Launched)


def test_queued_answers_come_first_then_the_default() -> None:
    cloud = FakeCloud()
    throttled = RetryLater(code="RequestLimitExceeded", message="slow down")
    cloud.next("acquire", throttled, CloudError("InternalError", "boom"))
    assert cloud.acquire(request()) == throttled
    with pytest.raises(CloudError):
        cloud.acquire(request())
    assert isinstance(cloud.acquire(request()), Launched)
    assert [c.raised is not None for c in cloud.calls("acquire")] == [False, True, False]
    assert cloud.requests("acquire") == [request()] * 3


def test_a_later_method_carries_a_scripted_error_in_its_future() -> None:
    cloud = FakeCloud()
    cloud.next("describe_later", CloudError("UnauthorizedOperation", "no"))
    with pytest.raises(CloudError):
        cloud.describe_later(["i-1"]).result()
    (call,) = cloud.calls("describe_later")
    assert (call["instance_ids"], call["also"], call["reuse"]) == (["i-1"], (), False)


def test_a_held_future_is_answered_by_the_test() -> None:
    cloud = FakeCloud()
    cloud.hold("read_topology_later")
    future = cloud.read_topology_later(["i-1"])
    assert not future.done()
    (held,) = cloud.held("read_topology_later")
    assert held is future
    with pytest.raises(ValueError, match="answers at once"):
        cloud.hold("acquire")


def test_hooks_run_for_every_call_until_cleared() -> None:
    cloud = FakeCloud()
    cloud.on("prune_templates", lambda: ("lt-1",))
    assert cloud.prune_templates() == cloud.prune_templates() == ("lt-1",)
    cloud.on("prune_templates", None)
    assert cloud.prune_templates() == ()
    with pytest.raises(AttributeError, match="no call"):
        cloud.on("no_such_call", lambda: None)


def test_the_world_follows_scripted_answers() -> None:
    cloud = FakeCloud(groups=[PlacementGroup(name="g", strategy="cluster", pool="gone")])
    cloud.add(*instances())
    ids = tuple(i.instance_id for i in instances())
    cloud.next("release", ReleaseResult(terminated=ids[:1]))
    cloud.release(ReleaseRequest(instance_ids=ids))
    assert [i.instance_id for i in cloud.list_owned()] == list(ids[1:])
    cloud.in_use.add("g")
    assert not cloud.reap_placement_group("g")
    cloud.in_use.clear()
    assert cloud.reap_placement_group("g")
    assert cloud.list_placement_groups() == ()


def test_an_unused_cloud_fails_any_call_but_the_allowed_and_scripted() -> None:
    cloud = FakeCloud.unused("forget_pool")
    with pytest.raises(AssertionError, match="the cloud was called: acquire"):
        cloud.acquire(request())
    cloud.forget_pool("train")
    assert cloud.reported_unhealthy(["i-1"]) == ()  # a read of recorded answers, no call
    answer: Future[object] = Future()
    cloud.next("describe_later", answer)
    assert cloud.describe_later(["i-1"]) is answer


def test_the_manual_clock_is_the_engines_monotonic_wall_and_sleeper() -> None:
    clock = ManualClock(start=1000.0, wall=T0)
    clock.sleep(2.5)
    clock.advance(0.5)
    assert (clock.monotonic(), clock(), clock.slept) == (1003.0, 1003.0, [2.5])
    assert clock.now() == T0 + timedelta(seconds=3)

"""Batched EC2 calls on moto + the layer: one DescribeInstances for many pools, and an
id EC2 does not know never fails another pool's request (EC2 fails the whole call)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_provisioner.cloud import AcquireRequest, CloudError, Launched, ReleaseRequest
from atomic_gang_provisioner.cloud.aws import Ec2Provider, batch
from atomic_gang_provisioner.cloud.batcher import Windows
from tests.integration.cloud.conftest import Factory, live
from tests.support.clock import ManualClock

DEADLINE = 30.0
UNKNOWN = "i-0123456789abcdef0"
Spec = Callable[..., GangSpec]


@pytest.fixture
def wide(make_provider: Factory) -> Ec2Provider:
    """Windows wide enough that requests made one after the other share a batch."""
    return make_provider(batch=Windows(idle_seconds=0.3, max_seconds=2))


def launch(provider: Ec2Provider, make_spec: Spec, pool: str) -> tuple[str, ...]:
    result = provider.acquire(AcquireRequest(spec=make_spec(pool=pool, count=2), generation=0))
    assert isinstance(result, Launched), result
    return result.instance_ids


def test_many_pools_share_one_describe_and_each_gets_its_own_answer(
    wide: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    a, b = launch(wide, make_spec, "a"), launch(wide, make_spec, "b")
    fake.clear_calls()
    fa, fb = wide.describe_later(a), wide.describe_later(b)
    assert sorted(i.instance_id for i in fa.result(DEADLINE)) == sorted(a)
    assert sorted(i.instance_id for i in fb.result(DEADLINE)) == sorted(b)
    assert len(fake.calls("DescribeInstances")) == 1


def test_an_unknown_id_is_absent_from_its_own_answer_and_fails_no_other_pool(
    wide: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    a, b = launch(wide, make_spec, "a"), launch(wide, make_spec, "b")
    fake.clear_calls()
    fa, fb = wide.describe_later(a), wide.describe_later((*b, UNKNOWN))
    assert sorted(i.instance_id for i in fa.result(DEADLINE)) == sorted(a)
    assert sorted(i.instance_id for i in fb.result(DEADLINE)) == sorted(b)
    outcomes = [c["outcome"] for c in fake.calls("DescribeInstances")]
    assert outcomes == ["error:InvalidInstanceID.NotFound", "ok"]


def test_terminations_are_batched_and_a_bad_id_fails_only_its_caller(
    wide: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    a, b = launch(wide, make_spec, "a"), launch(wide, make_spec, "b")
    fake.clear_calls()
    with ThreadPoolExecutor(2) as pool:
        good = pool.submit(wide.release, ReleaseRequest(instance_ids=a))
        bad = pool.submit(wide.release, ReleaseRequest(instance_ids=(*b, UNKNOWN)))
        assert sorted(good.result(DEADLINE).terminated) == sorted(a)
        assert sorted(bad.result(DEADLINE).terminated) == sorted(b)  # the forgotten id dropped
    assert not {i.id for i in live()} & {*a, *b}
    first = fake.calls("TerminateInstances")[0]
    assert first["outcome"] == "error:InvalidInstanceID.NotFound"
    assert {*a, *b, UNKNOWN} <= set(first["params"].values())  # one call for both pools


def test_describe_errors_other_than_unknown_ids_reach_every_caller(
    wide: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    a = launch(wide, make_spec, "a")
    fake.add_rule({"action": "DescribeInstances", "code": "UnauthorizedOperation", "status": 403})
    with pytest.raises(CloudError, match="UnauthorizedOperation"):
        wide.describe_later(a).result(DEADLINE)


def test_a_join_check_takes_another_pools_recent_answer_and_asks_ec2_once_it_is_old(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    """Pool a's join check asks along for joining pool b; b's check, 6 s later, is
    answered from that call; 11 s later (past ec2Api.describeReuseSeconds, 10) it asks."""
    a, b = launch(provider, make_spec, "a"), launch(provider, make_spec, "b")
    fake.clear_calls()
    provider.describe_later(a, also=b, reuse=True).result(DEADLINE)
    (call,) = fake.calls("DescribeInstances")
    assert {*a, *b} == {v for k, v in call["params"].items() if k.startswith("InstanceId")}
    clock.sleep(6)
    reused = provider.describe_later(b, reuse=True)
    assert reused.done()  # no call, no batch: the answer is there
    assert sorted(i.instance_id for i in reused.result()) == sorted(b)
    assert {i.state for i in reused.result()} <= {"pending", "running"}
    assert provider.describe_later(b).result(DEADLINE)  # without reuse: always asks EC2
    assert len(fake.calls("DescribeInstances")) == 2
    clock.sleep(11)
    provider.describe_later(b, reuse=True).result(DEADLINE)
    assert len(fake.calls("DescribeInstances")) == 3


def test_a_terminated_instance_seen_in_a_recent_answer_is_reported_as_terminated(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    """The reuse never hides a death EC2 has already reported; a gone id is never reused."""
    a = launch(provider, make_spec, "a")
    provider.release(ReleaseRequest(instance_ids=a[:1]))
    provider.describe_later(a).result(DEADLINE)
    fake.clear_calls()
    seen = {i.instance_id: i.state for i in provider.describe_later(a, reuse=True).result()}
    assert seen[a[0]] in ("shutting-down", "terminated")
    assert seen[a[1]] == "running"
    assert fake.calls("DescribeInstances") == []
    assert not provider.describe_later((*a, UNKNOWN), reuse=True).done()  # never seen: asks


def test_ec2s_last_word_on_an_instance_is_kept_for_the_join_check(
    provider: Ec2Provider, make_spec: Spec, clock: ManualClock
) -> None:
    """A join check its Nodes vouch for still asks EC2 about an instance EC2 last called
    unhealthy, however old that answer; ids never described, or described running, pass."""
    a = launch(provider, make_spec, "a")
    assert provider.reported_unhealthy(a) == ()  # launched, never described
    provider.describe_later(a).result(DEADLINE)
    assert provider.reported_unhealthy(a) == ()
    provider.release(ReleaseRequest(instance_ids=a[:1]))
    provider.describe_later(a).result(DEADLINE)
    clock.sleep(3600)
    assert provider.reported_unhealthy((*a, UNKNOWN)) == (a[0],)


def test_ids_asked_along_fill_the_call_and_never_add_one(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "IDS_PER_CALL", 4)  # calls of 4 ids, to see the room fill
    a = launch(provider, make_spec, "a")
    others = (*launch(provider, make_spec, "b"), *launch(provider, make_spec, "c"))
    fake.clear_calls()
    answer = provider.describe_later(a, also=others).result(DEADLINE)
    assert sorted(i.instance_id for i in answer) == sorted(a)  # only the asker's own
    (call,) = fake.calls("DescribeInstances")  # the room of one call, no second chunk
    asked = [v for k, v in call["params"].items() if k.startswith("InstanceId")]
    assert set(a) < set(asked)
    assert len(asked) == 4

"""The engine's topology read: DescribeInstanceTopology shared by the gangs that ask
together, paced below EC2's 1/s by the batch thread, cached per instance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_provisioner.cloud import AcquireRequest, Launched
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from atomic_gang_provisioner.cloud.aws.topology_reader import THROTTLED_WAIT
from atomic_gang_provisioner.cloud.naming import placement_group_name
from tests.integration.cloud.conftest import CLUSTER
from tests.support.clock import ManualClock

Spec = Callable[..., GangSpec]


def launch(engine: Ec2Provider, spec: GangSpec) -> tuple[str, ...]:
    result = engine.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched), result
    return result.instance_ids


def test_a_gang_in_one_group_has_spread_one_and_is_read_once(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    ids = launch(provider, make_spec(count=4, placement="cluster"))
    read = provider.read_topology_later(ids).result()
    assert read.retry_after == 0
    assert sorted(i for i, _ in read.nodes) == sorted(ids)
    assert {len(n) for _, n in read.nodes} == {3}
    assert read.spread == 1
    clock.sleep(5)
    assert provider.read_topology_later(ids).result() == read  # cached: no second call
    (call,) = fake.calls("DescribeInstanceTopology")
    assert sorted(v for k, v in call["params"].items() if k.startswith("InstanceId")) == sorted(ids)


def test_a_group_that_spills_has_spread_two(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.set_topology_node_size(2, group=placement_group_name(cluster=CLUSTER, pool="train"))
    ids = launch(provider, make_spec(count=4, placement="cluster"))
    assert provider.read_topology_later(ids).result().spread == 2


def test_the_next_gang_waits_for_a_token_in_the_batch_thread_not_in_a_reconcile(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    """Paced a tenth below EC2's 1/s: EC2 never throttles us, and the second gang's
    answer comes after the wait, with nothing for its reconcile to retry."""
    first = launch(provider, make_spec(pool="a", count=2, placement="cluster"))
    second = launch(provider, make_spec(pool="b", count=2, placement="cluster"))
    assert provider.read_topology_later(first).result().spread == 1
    before = list(clock.slept)
    later = provider.read_topology_later(second).result()
    assert (later.spread, later.retry_after) == (1, 0)
    (waited,) = clock.slept[len(before) :]
    assert 1.0 < waited <= 1 / 0.9 + 1e-6
    assert [c["outcome"] for c in fake.calls("DescribeInstanceTopology")] == ["ok", "ok"]


def test_gangs_outside_a_group_spread_and_unsupported_types_have_none(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    loose = launch(provider, make_spec(pool="loose", count=3))
    assert provider.read_topology_later(loose).result().spread == 3
    clock.sleep(1)
    small = launch(
        provider,
        make_spec(pool="small", count=2, instance_type="m5.large", ami_variant="standard"),
    )
    read = provider.read_topology_later(small).result()
    assert (read.nodes, read.spread, read.retry_after) == ((), 0, 0)


def test_throttled_by_ec2_after_the_retries_is_a_later_not_an_error(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    ids = launch(provider, make_spec(count=2, placement="cluster"))
    fake.add_rule(
        {
            "action": "DescribeInstanceTopology",
            "code": "RequestLimitExceeded",
            "status": 503,
            "times": None,
        }
    )
    read = provider.read_topology_later(ids).result()
    assert (read.nodes, read.retry_after) == ((), THROTTLED_WAIT)
    assert len(fake.calls("DescribeInstanceTopology")) == 4  # the caller's retry budget


def ids_of(call: dict[str, Any]) -> list[str]:
    return [v for k, v in call["params"].items() if k.startswith("InstanceId")]


def test_other_gangs_ids_ride_along_so_their_own_read_is_a_cache_hit(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    first = launch(provider, make_spec(pool="a", count=2, placement="cluster"))
    second = launch(provider, make_spec(pool="b", count=2, placement="cluster"))
    assert provider.read_topology_later(first, also=second).result().spread == 1
    later = provider.read_topology_later(second, also=first)
    assert later.done()  # cached: no call, no wait
    assert later.result().spread == 1
    (call,) = fake.calls("DescribeInstanceTopology")
    assert ids_of(call) == [*sorted(first), *second]  # the asker's own ids first


def test_a_read_failed_by_an_id_asked_along_is_asked_again_without_them(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    """One gang's bad id never fails another gang's read."""
    mine = launch(provider, make_spec(pool="a", count=2, placement="cluster"))
    bad = "i-0badbadbadbadbad0"
    fake.add_rule(
        {
            "action": "DescribeInstanceTopology",
            "code": "InvalidInstanceID.Malformed",
            "status": 400,
            "times": None,
            "match": {"InstanceId.3": bad},
        }
    )
    read = provider.read_topology_later(mine, also=(bad,)).result()
    assert (read.reason, read.spread) == (None, 1)
    calls = fake.calls("DescribeInstanceTopology")
    assert [c["outcome"] for c in calls] == ["error:InvalidInstanceID.Malformed", "ok"]
    assert ids_of(calls[1]) == sorted(mine)

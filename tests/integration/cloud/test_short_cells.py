"""Shortfalls share what they learned (moto + the layer's capacity): once a cell is known
short, only the pool that has waited longest probes it; the others wait behind it with
no RunInstances, and a release of that type clears the cell at once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    ReleaseRequest,
    Shortfall,
    Waiting,
)
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from tests.integration.cloud.conftest import TYPE

Spec = Callable[..., GangSpec]
T0 = datetime(2026, 12, 1, tzinfo=UTC)
ZONE = "us-east-1a"


def request(make_spec: Spec, pool: str, *, waited: int, generation: int = 0) -> AcquireRequest:
    spec = make_spec(pool=pool, count=2, availability_zones=(ZONE,))
    since = T0 - timedelta(seconds=waited)
    return AcquireRequest(spec=spec, generation=generation, waiting_since=since)


def test_only_the_longest_waiting_pool_probes_a_short_cell_until_a_release(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    fake.set_capacity(ZONE, TYPE, 0)
    first = provider.acquire(request(make_spec, "young", waited=5))
    assert isinstance(first, Shortfall)  # the cell is learnt short
    fake.clear_calls()
    old = provider.acquire(request(make_spec, "old", waited=60, generation=1))
    assert isinstance(old, Shortfall)  # the longest waiting probes it
    young = provider.acquire(request(make_spec, "young", waited=5, generation=1))
    assert isinstance(young, Waiting)
    assert young.reason == "WaitingForCapacity"
    assert young.message == f"waiting for {TYPE} in {ZONE}: 1 gang ahead"
    assert len(fake.calls("RunInstances")) == 1  # old's probe only
    fake.set_capacity(ZONE, TYPE, None)
    holder = make_spec(pool="holder", count=1, availability_zones=("us-east-1b",))
    other = provider.acquire(AcquireRequest(spec=holder, generation=0))
    assert isinstance(other, Launched)
    provider.release(ReleaseRequest(instance_ids=other.instance_ids, instance_type=TYPE))
    again = provider.acquire(request(make_spec, "young", waited=5, generation=1))
    assert isinstance(again, Launched)  # the release cleared the cell at once

"""Shortfalls share what they learned (moto + the layer's capacity): once a cell is known
short, one pool at a time probes it, the longest waiting; the others wait behind it with
no RunInstances, and a release of what we held there lets in the first in line that
fits it, with no probe."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

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
from tests.support.clock import ManualClock

Spec = Callable[..., GangSpec]
T0 = datetime(2026, 12, 1, tzinfo=UTC)
ZONE = "us-east-1a"


def request(make_spec: Spec, pool: str, *, waited: int, generation: int = 0) -> AcquireRequest:
    spec = make_spec(pool=pool, count=2, availability_zones=(ZONE,))
    since = T0 - timedelta(seconds=waited)
    return AcquireRequest(spec=spec, generation=generation, waiting_since=since)


def test_only_the_longest_waiting_pool_probes_a_short_cell_until_a_release(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    fake.set_capacity(ZONE, TYPE, 2)
    holder = provider.acquire(request(make_spec, "holder", waited=0))
    assert isinstance(holder, Launched)  # we hold 2 there
    first = provider.acquire(request(make_spec, "young", waited=5))
    assert isinstance(first, Shortfall)  # the cell is learnt short: 2 fit, not 4
    fake.clear_calls()
    old = provider.acquire(request(make_spec, "old", waited=60, generation=1))
    assert isinstance(old, Waiting)  # the longest waiting probes, at the cell's backoff
    assert old.reason == "WaitingForCapacity"
    assert old.message == f"waiting for {TYPE} in {ZONE}: next try in 5s"
    young = provider.acquire(request(make_spec, "young", waited=5, generation=1))
    assert isinstance(young, Waiting)
    assert young.message == f"waiting for {TYPE} in {ZONE}: 1 gang ahead"
    clock.sleep(5)
    assert isinstance(
        provider.acquire(request(make_spec, "old", waited=60, generation=1)), Shortfall
    )
    assert len(fake.calls("RunInstances")) == 1  # old's probe only
    provider.release(ReleaseRequest(instance_ids=holder.instance_ids))
    again = provider.acquire(request(make_spec, "young", waited=5, generation=1))
    assert isinstance(again, Waiting)  # the 2 released are old's: it is first in line
    assert isinstance(
        provider.acquire(request(make_spec, "old", waited=60, generation=1)), Launched
    )
    after = provider.acquire(request(make_spec, "young", waited=5, generation=1))
    assert isinstance(after, Waiting)  # none is known free now: young sends no sure shortfall
    assert [c["outcome"] for c in fake.calls("RunInstances")][-1] == "ok"
    assert len(fake.calls("RunInstances")) == 2  # the probe and old's launch, no more


def test_the_pool_that_probes_next_comes_back_when_its_probe_is_due(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    """The others poll every 2 s (no EC2 call); the first in line is told to come back
    at its probe time once that is sooner, so the probe is not up to 2 s late."""
    fake.set_capacity(ZONE, TYPE, 2)
    assert isinstance(provider.acquire(request(make_spec, "holder", waited=0)), Launched)
    assert isinstance(provider.acquire(request(make_spec, "young", waited=5)), Shortfall)
    old = provider.acquire(request(make_spec, "old", waited=60, generation=1))
    young = provider.acquire(request(make_spec, "young", waited=5, generation=1))
    assert isinstance(old, Waiting)
    assert isinstance(young, Waiting)
    assert (old.retry_after, young.retry_after) == (2.0, 2.0)  # its probe is 5 s away
    clock.sleep(3.5)
    soon = provider.acquire(request(make_spec, "old", waited=60, generation=1))
    assert isinstance(soon, Waiting)
    assert soon.retry_after == pytest.approx(1.5, abs=0.05)
    later = provider.acquire(request(make_spec, "young", waited=5, generation=1))
    assert isinstance(later, Waiting)
    assert later.retry_after == 2.0


def test_a_gang_waiting_long_is_owed_what_a_release_frees(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    """The line ages a pool by its acquiringSince, in wall time: a 4-gang that has waited
    160 s gets the 2 + 2 instances our releases free, not the 2-gang behind it."""

    def ask(pool: str, count: int, waited: float) -> object:
        spec = make_spec(pool=pool, count=count, availability_zones=(ZONE,))
        since = clock.now() - timedelta(seconds=waited)
        return provider.acquire(AcquireRequest(spec=spec, generation=1, waiting_since=since))

    fake.set_capacity(ZONE, TYPE, 4)
    first, second = (ask(p, 2, 0) for p in ("first", "second"))
    assert isinstance(first, Launched)
    assert isinstance(second, Launched)  # we hold all 4
    assert isinstance(ask("four", 4, 160), Shortfall)  # the cell is learnt short
    provider.release(ReleaseRequest(instance_ids=first.instance_ids))
    assert isinstance(ask("four", 4, 160), Waiting)  # in line: it probes a second later
    two = ask("two", 2, 5)
    assert isinstance(two, Waiting)  # the 2 free would fit it, but they are owed
    assert two.message == f"waiting for {TYPE} in {ZONE}: 1 gang ahead"
    freed = provider.release(ReleaseRequest(instance_ids=second.instance_ids))
    assert freed.room_for == ("four", "two")  # woken to ask now, not at their poll
    assert isinstance(ask("four", 4, 161), Launched)

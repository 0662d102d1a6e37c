"""The adapter and reservations, on moto plus the layer: described once for every
pool, cached, judged before any launch, tried in the Job's order."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from atomic_gang import GangSpec
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    AwaitingReservation,
    Launched,
    PermanentFailure,
    Shortfall,
)
from atomic_gang_provisioner.cloud.aws import AwsClients, Ec2Provider
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.reservation_book import ReservationBook
from atomic_gang_provisioner.cloud.reservation_fit import BlockPolicy, iso
from tests.integration.cloud.conftest import TYPE, Factory, live, pool_instances
from tests.support.clock import ManualClock

Spec = Callable[..., GangSpec]
LAUNCHES = ("RunInstances", "CreateFleet")


def launches(fake: FakeAws) -> list[dict[str, Any]]:
    return [c for c in fake.calls() if c["action"] in LAUNCHES]


def describes(fake: FakeAws) -> list[dict[str, Any]]:
    return fake.calls("DescribeCapacityReservations")


def block(fake: FakeAws, clock: ManualClock, rid: str, **fields: Any) -> None:
    fields.setdefault("zone", "us-east-1b")
    fields.setdefault("count", 4)
    fields.setdefault("start_date", clock.now() - timedelta(minutes=5))
    fields.setdefault("end_date", clock.now() + timedelta(hours=6))
    fake.add_reservation(rid, instance_type=TYPE, kind="capacity-block", **fields)


@pytest.fixture
def book(provider: Ec2Provider, clients: AwsClients, clock: ManualClock) -> ReservationBook:
    """The book every acquire of the engine reads its reservations from, as the engine
    builds it."""
    return ReservationBook(
        ec2=clients.ec2,
        caller=Caller(backoff=provider.config.backoff, sleeper=clock.sleep),
        monotonic=clock.monotonic,
        wall=clock.now,
        ttl_seconds=provider.config.reservation_ttl_seconds,
    )


def test_one_call_describes_every_pools_reservations_and_is_cached(
    book: ReservationBook, fake: FakeAws, clock: ManualClock
) -> None:
    for rid in ("cr-a1", "cr-a2", "cr-b1"):
        fake.add_reservation(rid, zone="us-east-1a", instance_type=TYPE, count=2)
    mine = book.get(["cr-a1", "cr-a2"], also=["cr-b1"])
    assert sorted(r.reservation_id for r in mine.values() if r) == ["cr-a1", "cr-a2"]
    other = book.get(["cr-b1"])
    assert other["cr-b1"] is not None
    assert other["cr-b1"].available == 2
    (call,) = describes(fake)
    assert sorted(
        v for k, v in call["params"].items() if k.startswith("CapacityReservationId")
    ) == [
        "cr-a1",
        "cr-a2",
        "cr-b1",
    ]
    clock.sleep(10)  # the TTL: counts move, so read again
    book.get(["cr-b1"])
    assert len(describes(fake)) == 2


def test_an_unknown_id_is_found_by_halving_and_remembered(
    book: ReservationBook, fake: FakeAws
) -> None:
    for rid in ("cr-k1", "cr-k2", "cr-k3"):
        fake.add_reservation(rid, zone="us-east-1a", instance_type=TYPE, count=1)
    found = book.get(["cr-k1", "cr-k2", "cr-nope", "cr-k3"])
    assert found["cr-nope"] is None
    assert all(found[r] is not None for r in ("cr-k1", "cr-k2", "cr-k3"))
    failed = [c for c in describes(fake) if c["outcome"] != "ok"]
    assert len(failed) == 3  # the batch, its half holding cr-nope, then cr-nope alone
    calls = len(describes(fake))
    book.get(["cr-nope", "cr-k1"])
    assert len(describes(fake)) == calls


def test_a_block_to_come_costs_no_launch_then_launches_at_its_start(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock, world: World
) -> None:
    start = clock.now().replace(microsecond=0) + timedelta(minutes=1)
    block(fake, clock, "cr-w1", start_date=start)
    spec = make_spec(count=4, capacity_reservation_id="cr-w1")
    early = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(early, AwaitingReservation)
    assert early.starts_at == start
    assert early.message.startswith(f"Capacity Block cr-w1 starts at {iso(start)} (in ")
    assert launches(fake) == []
    clock.sleep(60)  # the start has passed since the read: the cache reads again
    done = provider.acquire(AcquireRequest(spec=spec, generation=1))
    assert isinstance(done, Launched)
    assert done.reservation is not None
    assert done.reservation.reservation_id == "cr-w1"
    assert {i.lifecycle for i in live()} == {"capacity-block"}
    (run,) = launches(fake)
    assert run["params"]["InstanceMarketOptions.MarketType"] == "capacity-block"
    assert run["params"]["SubnetId"] == world.subnets["us-east-1b"]


def test_an_unfit_list_is_rejected_with_zero_launch_calls(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    fake.add_reservation("cr-u1", zone="us-east-1a", instance_type="p5.48xlarge", count=4)
    block(fake, clock, "cr-u2", zone="us-east-1c")
    spec = make_spec(
        count=4, availability_zones=("us-east-1b",), capacity_reservation_id="cr-u1,cr-u2"
    )
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, PermanentFailure)
    assert (result.code, result.rejects) == ("CapacityReservationMismatch", True)
    assert "cr-u1 reserves instance type p5.48xlarge; the gang uses p4d.24xlarge" in (
        result.message
    )
    assert "cr-u2 is in AZ us-east-1c; the gang may launch in us-east-1b" in result.message
    assert launches(fake) == []
    assert fake.calls("CreateLaunchTemplate") == []


def test_too_few_available_is_read_not_launched(
    provider: Ec2Provider,
    make_spec: Spec,
    fake: FakeAws,
    admin: dict[str, Any],
    clock: ManualClock,
) -> None:
    fake.add_reservation("cr-s1", zone="us-east-1a", instance_type=TYPE, count=4)
    spec = make_spec(count=4, capacity_reservation_id="cr-s1")
    other = make_spec(pool="squatter", count=1, capacity_reservation_id="cr-s1")
    assert isinstance(provider.acquire(AcquireRequest(spec=other, generation=0)), Launched)
    short = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(short, Shortfall)
    assert "3/4 available" in short.attempts[0].message
    assert len(launches(fake)) == 1
    admin["ec2"].terminate_instances(InstanceIds=[i.id for i in pool_instances("squatter")])
    clock.sleep(10)  # the cached count expires
    assert isinstance(provider.acquire(AcquireRequest(spec=spec, generation=1)), Launched)


def test_a_full_reservation_at_launch_moves_on_to_the_next_listed(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    """The count said yes, EC2 said no (someone was faster): the next one is tried."""
    block(fake, clock, "cr-n1", zone="us-east-1a")
    block(fake, clock, "cr-n2", zone="us-east-1a")
    fake.add_rule(
        {
            "action": "RunInstances",
            "code": "ReservationCapacityExceeded",
            "status": 400,
            "match": {
                "CapacityReservationSpecification.CapacityReservationTarget"
                ".CapacityReservationId": "cr-n1"
            },
        }
    )
    spec = make_spec(count=4, capacity_reservation_id="cr-n1,cr-n2")
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched)
    assert result.reservation is not None
    assert result.reservation.reservation_id == "cr-n2"
    first, second = (c["params"]["ClientToken"] for c in launches(fake))
    assert first != second  # same AZ, another reservation: a token of its own
    assert {i.capacity_reservation_id for i in result.instances} <= {"cr-n2", ""}
    assert {i.capacity_reservation_id for i in live()} == {"cr-n2"}


def test_a_reservation_in_another_placement_group_moves_on_to_the_next_listed(
    provider: Ec2Provider,
    make_spec: Spec,
    fake: FakeAws,
    clock: ManualClock,
    admin: dict[str, Any],
) -> None:
    """Its capacity sits in a group the Job did not name: judged unfit, never launched."""
    for group in ("theirs", "mine"):
        admin["ec2"].create_placement_group(GroupName=group, Strategy="cluster")
    block(fake, clock, "cr-g1", zone="us-east-1a", placement_group="theirs")
    block(fake, clock, "cr-g2", zone="us-east-1a", placement_group="mine")
    spec = make_spec(count=4, capacity_reservation_id="cr-g1,cr-g2", placement_group_name="mine")
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched)
    assert result.reservation is not None
    assert result.reservation.reservation_id == "cr-g2"
    (run,) = launches(fake)
    assert run["params"]["Placement.GroupName"] == "mine"
    alone = make_spec(
        pool="alone", count=4, capacity_reservation_id="cr-g1", placement_group_name="mine"
    )
    refused = provider.acquire(AcquireRequest(spec=alone, generation=0))
    assert isinstance(refused, PermanentFailure)
    assert refused.code == "CapacityReservationMismatch"
    assert "cr-g1 sits in placement group theirs" in refused.message
    assert "atomic-gang.k8s.aws/placement-group-name" in refused.message
    assert len(launches(fake)) == 1


def test_min_runtime_skips_a_block_ending_too_soon_for_the_next(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    block(fake, clock, "cr-m1", end_date=clock.now() + timedelta(hours=2))
    block(fake, clock, "cr-m2", end_date=clock.now() + timedelta(hours=9))
    spec = make_spec(count=4, capacity_reservation_id="cr-m1,cr-m2")
    policy = BlockPolicy(needed=timedelta(hours=3), needed_from="min-runtime")
    result = provider.acquire(AcquireRequest(spec=spec, generation=0, block_policy=policy))
    assert isinstance(result, Launched)
    assert result.reservation is not None
    assert result.reservation.reservation_id == "cr-m2"
    (run,) = launches(fake)
    key = "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"
    assert run["params"][key] == "cr-m2"


def test_the_reservation_fixes_the_az(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    block(fake, clock, "cr-z1", zone="us-east-1c")
    spec = make_spec(count=4, capacity_reservation_id="cr-z1")
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched)
    assert {i.availability_zone for i in result.instances} == {"us-east-1c"}
    assert len(launches(fake)) == 1


def test_fleet_into_a_block_is_one_create_fleet(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    block(fake, clock, "cr-f1")
    spec = make_spec(mode="fleet", count=4, capacity_reservation_id="cr-f1")
    result = provider.acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(result, Launched)
    (fleet,) = launches(fake)
    assert fleet["action"] == "CreateFleet"
    assert fleet["params"]["TargetCapacitySpecification.DefaultTargetCapacityType"] == (
        "capacity-block"
    )
    assert len(result.instances) == 4
    assert {i.lifecycle for i in live()} == {"capacity-block"}


def test_an_adopted_set_knows_its_block(
    make_provider: Factory, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    block(fake, clock, "cr-d1")
    spec = make_spec(count=4, capacity_reservation_id="cr-d1")
    fake.add_rule({"action": "RunInstances", "effect": "lost_response", "times": 4})
    lost = make_provider().acquire(AcquireRequest(spec=spec, generation=0))
    assert not isinstance(lost, Launched)
    adopted = make_provider().acquire(AcquireRequest(spec=spec, generation=0))
    assert isinstance(adopted, Launched)
    assert adopted.adopted
    assert adopted.reservation is not None
    assert adopted.reservation.reservation_id == "cr-d1"


def test_each_described_reservation_reports_its_available_count(
    make_provider: Factory, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    """What the metrics gauge is fed: every reservation as described, before and after
    a launch debited it."""
    seen: list[tuple[str, str, int]] = []

    def saw(reservation_id: str, *, kind: str, available: int) -> None:
        seen.append((reservation_id, kind, available))

    provider = make_provider(on_reservation=saw)
    block(fake, clock, "cr-m1", count=4)
    fake.add_reservation("cr-m2", zone="us-east-1b", instance_type=TYPE, count=8)
    spec = make_spec(count=4, capacity_reservation_id="cr-m1")
    first = provider.acquire(AcquireRequest(spec=spec, generation=0, also_reservations=("cr-m2",)))
    assert seen == [("cr-m1", "capacity-block", 4), ("cr-m2", "odcr", 8)]
    assert isinstance(first, Launched)
    after = make_spec(pool="next", count=4, capacity_reservation_id="cr-m1")
    provider.acquire(AcquireRequest(spec=after, generation=0))  # reads cr-m1 again
    assert seen[-1] == ("cr-m1", "capacity-block", 0)

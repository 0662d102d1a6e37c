"""The layer's capacity reservations: a state the clock moves, launches that
honour the target and market (request and launch template), counts debited
and credited, EC2's errors, and EC2's own end of a Capacity Block."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pydantic import ValidationError

from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from tests.integration.cloud.conftest import TYPE, live
from tests.integration.cloud.test_fake_layer import AMI, code, run
from tests.support.clock import ManualClock

ZONE = "us-east-1a"
BLOCK: dict[str, Any] = {"InstanceMarketOptions": {"MarketType": "capacity-block"}}


def target(rid: str) -> dict[str, Any]:
    return {
        "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": rid},
        }
    }


def describe(ec2: Any, rid: str) -> dict[str, Any]:
    (cr,) = ec2.describe_capacity_reservations(CapacityReservationIds=[rid])["CapacityReservations"]
    found: dict[str, Any] = cr
    return found


def block(fake: FakeAws, clock: ManualClock, rid: str, *, count: int = 4, **fields: Any) -> None:
    """A block from now+1h to now+5h, unless the fields say otherwise."""
    fields.setdefault("start_date", clock.now() + timedelta(hours=1))
    fields.setdefault("end_date", clock.now() + timedelta(hours=5))
    fake.add_reservation(
        rid, zone=ZONE, instance_type=TYPE, count=count, kind="capacity-block", **fields
    )


def test_the_clock_moves_a_block_scheduled_active_expired(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    block(fake, clock, "cr-b1")
    cr = describe(ec2, "cr-b1")
    assert (cr["State"], cr["AvailableInstanceCount"], cr["TotalInstanceCount"]) == (
        "scheduled",
        0,
        4,
    )
    assert cr["ReservationType"] == "capacity-block"
    assert cr["InstanceMatchCriteria"] == "targeted"
    assert (cr["Tenancy"], cr["EndDateType"]) == ("default", "limited")
    assert cr["CapacityBlockId"].startswith("cb-")
    assert cr["EndDate"] - cr["StartDate"] == timedelta(hours=4)
    clock.sleep(3600)
    assert (describe(ec2, "cr-b1")["State"], describe(ec2, "cr-b1")["AvailableInstanceCount"]) == (
        "active",
        4,
    )
    clock.sleep(4 * 3600)
    assert describe(ec2, "cr-b1")["State"] == "expired"
    assert describe(ec2, "cr-b1")["AvailableInstanceCount"] == 0


def test_a_given_state_overrides_the_clock(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    block(fake, clock, "cr-b2", start_date=clock.now(), state="payment-pending")
    assert describe(admin["ec2"], "cr-b2")["State"] == "payment-pending"
    with pytest.raises(ClientError) as err:
        run(admin["ec2"], world, 2, **target("cr-b2"), **BLOCK)
    assert code(err) == "InsufficientInstanceCapacity"
    assert "payment-pending" in str(err.value)
    block(fake, clock, "cr-b2", start_date=clock.now())  # the same id again: replaced
    assert describe(admin["ec2"], "cr-b2")["State"] == "active"


def test_launches_before_the_start_and_after_the_end_are_refused(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    block(fake, clock, "cr-b3")
    with pytest.raises(ClientError) as err:
        run(ec2, world, 2, **target("cr-b3"), **BLOCK)
    assert code(err) == "InsufficientInstanceCapacity"
    assert "scheduled" in str(err.value)
    clock.sleep(3600)
    ids = run(ec2, world, 2, **target("cr-b3"), **BLOCK)
    assert len(ids) == 2
    clock.sleep(3.5 * 3600)  # EndDate - 30 min: EC2 takes the block back
    with pytest.raises(ClientError) as err:
        run(ec2, world, 1, **target("cr-b3"), **BLOCK)
    assert code(err) == "InsufficientInstanceCapacity"
    assert "ends at" in str(err.value)
    clock.sleep(3600)
    with pytest.raises(ClientError) as err:
        run(ec2, world, 1, **target("cr-b3"), **BLOCK)
    assert "expired" in str(err.value)


def test_block_instances_show_their_reservation_and_lifecycle(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    block(fake, clock, "cr-b4", start_date=clock.now())
    fake.add_reservation("cr-o1", zone=ZONE, instance_type=TYPE, count=2)
    in_block = run(ec2, world, 2, **target("cr-b4"), **BLOCK)
    in_odcr = run(ec2, world, 1, **target("cr-o1"))
    plain = run(ec2, world, 1)
    found = {
        i["InstanceId"]: i
        for r in ec2.describe_instances(InstanceIds=in_block + in_odcr + plain)["Reservations"]
        for i in r["Instances"]
    }
    for iid in in_block:
        assert found[iid]["InstanceLifecycle"] == "capacity-block"
        assert found[iid]["CapacityReservationId"] == "cr-b4"
    assert "InstanceLifecycle" not in found[in_odcr[0]]
    assert found[in_odcr[0]]["CapacityReservationId"] == "cr-o1"
    assert "CapacityReservationId" not in found[plain[0]]

    def ids(name: str, value: str) -> set[str]:
        pages = ec2.describe_instances(Filters=[{"Name": name, "Values": [value]}])
        return {i["InstanceId"] for r in pages["Reservations"] for i in r["Instances"]}

    assert ids("instance-lifecycle", "capacity-block") == set(in_block)
    assert ids("capacity-reservation-id", "cr-o1") == set(in_odcr)


@pytest.mark.parametrize(
    ("extra", "rid", "needle"),
    [
        pytest.param({}, "cr-b5", "MarketType=capacity-block", id="block-without-its-market"),
        pytest.param(BLOCK, "cr-o2", "needs a Capacity Block", id="market-without-a-block"),
    ],
)
def test_the_market_type_and_the_reservation_go_together(
    admin: dict[str, Any],
    world: World,
    fake: FakeAws,
    clock: ManualClock,
    extra: dict[str, Any],
    rid: str,
    needle: str,
) -> None:
    block(fake, clock, "cr-b5", start_date=clock.now())
    fake.add_reservation("cr-o2", zone=ZONE, instance_type=TYPE, count=2)
    with pytest.raises(ClientError) as err:
        run(admin["ec2"], world, 1, **target(rid), **extra)
    assert code(err) == "InvalidParameterCombination"
    assert needle in str(err.value)
    assert live() == []


def test_counts_are_debited_and_credited(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    fake.add_reservation("cr-o3", zone=ZONE, instance_type=TYPE, count=4)
    first = run(ec2, world, 3, **target("cr-o3"))
    assert describe(ec2, "cr-o3")["AvailableInstanceCount"] == 1
    with pytest.raises(ClientError) as err:
        run(ec2, world, 2, **target("cr-o3"))
    assert code(err) == "ReservationCapacityExceeded"
    ec2.terminate_instances(InstanceIds=first[:1])
    assert describe(ec2, "cr-o3")["AvailableInstanceCount"] == 2
    assert len(run(ec2, world, 2, **target("cr-o3"))) == 2
    assert describe(ec2, "cr-o3")["AvailableInstanceCount"] == 0


@pytest.mark.parametrize(
    ("reservation", "launch", "needle"),
    [
        pytest.param({"zone": "us-east-1b"}, {}, "zone us-east-1b", id="zone"),
        pytest.param({"instance_type": "p5.48xlarge"}, {}, "type p5.48xlarge", id="type"),
        pytest.param(
            {"tenancy": "dedicated"}, {}, "tenancy dedicated, the launch is default", id="tenancy"
        ),
        pytest.param({"platform": "Windows"}, {}, "platform Windows", id="platform"),
    ],
)
def test_a_launch_that_does_not_match_is_refused(
    admin: dict[str, Any],
    world: World,
    fake: FakeAws,
    reservation: dict[str, Any],
    launch: dict[str, Any],
    needle: str,
) -> None:
    fields: dict[str, Any] = {"zone": ZONE, "instance_type": TYPE, "count": 2, **reservation}
    fake.add_reservation("cr-o4", **fields)
    with pytest.raises(ClientError) as err:
        run(admin["ec2"], world, 1, **target("cr-o4"), **launch)
    assert code(err) == "InvalidParameterValue"
    assert needle in str(err.value)
    assert live() == []


def _template(ec2: Any, name: str, data: dict[str, Any]) -> str:
    lt = ec2.create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"ImageId": AMI, "InstanceType": TYPE, **data}
    )
    return str(lt["LaunchTemplate"]["LaunchTemplateId"])


def test_the_launch_templates_target_and_market_are_honoured(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    block(fake, clock, "cr-b6", start_date=clock.now(), count=2)
    lt = _template(ec2, "block-lt", {**target("cr-b6"), **BLOCK})
    resp = ec2.run_instances(
        MinCount=2,
        MaxCount=2,
        SubnetId=world.subnets[ZONE],
        LaunchTemplate={"LaunchTemplateId": lt, "Version": "1"},
    )
    assert {i["InstanceLifecycle"] for i in resp["Instances"]} == {"capacity-block"}
    assert describe(ec2, "cr-b6")["AvailableInstanceCount"] == 0
    with pytest.raises(ClientError) as err:
        ec2.run_instances(
            MinCount=1,
            MaxCount=1,
            SubnetId=world.subnets[ZONE],
            LaunchTemplate={"LaunchTemplateId": lt, "Version": "1"},
        )
    assert code(err) == "ReservationCapacityExceeded"


def _fleet(ec2: Any, world: World, lt: str, n: int, kind: str = "capacity-block") -> Any:
    return ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={"TotalTargetCapacity": n, "DefaultTargetCapacityType": kind},
        OnDemandOptions={"MinTargetCapacity": n, "SingleInstanceType": True},
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": lt, "Version": "1"},
                "Overrides": [{"SubnetId": world.subnets[ZONE], "InstanceType": TYPE}],
            }
        ],
    )


def test_an_instant_fleet_into_a_block(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    block(fake, clock, "cr-b7", count=4)
    lt = _template(ec2, "fleet-block", {**target("cr-b7"), **BLOCK})
    early = _fleet(ec2, world, lt, 4)
    assert early["Instances"] == []
    assert early["Errors"][0]["ErrorCode"] == "InsufficientInstanceCapacity"
    assert early["Errors"][0]["Lifecycle"] == "capacity-block"
    wrong = _fleet(ec2, world, lt, 4, kind="on-demand")
    assert wrong["Instances"] == []
    assert wrong["Errors"][0]["ErrorCode"] == "InvalidFleetConfiguration"
    clock.sleep(3600)
    assert _fleet(ec2, world, lt, 5)["Instances"] == []  # more than the block holds
    done = _fleet(ec2, world, lt, 4)
    assert {g["Lifecycle"] for g in done["Instances"]} == {"capacity-block"}
    assert sum(len(g["InstanceIds"]) for g in done["Instances"]) == 4
    assert describe(ec2, "cr-b7")["AvailableInstanceCount"] == 0
    assert {i.lifecycle for i in live()} == {"capacity-block"}


def test_ec2_terminates_what_still_runs_30_minutes_before_the_end(
    admin: dict[str, Any], world: World, fake: FakeAws, clock: ManualClock
) -> None:
    ec2 = admin["ec2"]
    block(fake, clock, "cr-b8", start_date=clock.now(), end_date=clock.now() + timedelta(hours=2))
    ids = run(ec2, world, 2, **target("cr-b8"), **BLOCK)
    clock.sleep(90 * 60 - 1)
    ec2.describe_instances(InstanceIds=ids)
    assert fake.block_terminations() == []
    clock.sleep(1)
    states = {
        i["InstanceId"]: i["State"]["Name"]
        for r in ec2.describe_instances(InstanceIds=ids)["Reservations"]
        for i in r["Instances"]
    }
    assert set(states.values()) == {"terminated"}
    (record,) = fake.block_terminations()
    assert record["reservationId"] == "cr-b8"
    assert sorted(record["instanceIds"]) == sorted(ids)
    assert datetime.fromisoformat(record["due"]) <= datetime.fromisoformat(record["ranAt"])
    ec2.describe_instances()  # once per block
    assert len(fake.block_terminations()) == 1


def test_an_open_odcr_takes_a_matching_untargeted_launch(
    admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    fake.add_reservation(
        "cr-o5", zone=ZONE, instance_type=TYPE, count=2, instance_match_criteria="open"
    )
    run(ec2, world, 2)
    assert describe(ec2, "cr-o5")["AvailableInstanceCount"] == 0
    run(ec2, world, 3)  # does not fit: the open pool
    assert describe(ec2, "cr-o5")["AvailableInstanceCount"] == 0
    assert len(live()) == 5


def test_describe_filters_and_pages(admin: dict[str, Any], world: World, fake: FakeAws) -> None:
    ec2 = admin["ec2"]
    for i, zone in enumerate(("us-east-1a", "us-east-1b", "us-east-1a")):
        fake.add_reservation(f"cr-f{i}", zone=zone, instance_type=TYPE, count=1)
    found = ec2.describe_capacity_reservations(
        Filters=[{"Name": "availability-zone", "Values": ["us-east-1a"]}]
    )["CapacityReservations"]
    assert [c["CapacityReservationId"] for c in found] == ["cr-f0", "cr-f2"]
    pages = ec2.get_paginator("describe_capacity_reservations").paginate(
        PaginationConfig={"PageSize": 2}
    )
    sizes = [len(p["CapacityReservations"]) for p in pages]
    assert sizes == [2, 1]
    with pytest.raises(ClientError) as err:
        ec2.describe_capacity_reservations(CapacityReservationIds=["cr-f0", "cr-nope"])
    assert code(err) == "InvalidCapacityReservationId.NotFound"


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        pytest.param({"count": 0}, "count", id="count"),
        pytest.param({"kind": "spot"}, "kind", id="kind"),
        pytest.param({"state": "sleeping"}, "state", id="state"),
        pytest.param({"start_date": "2026-12-03T11:30:00"}, "timezone", id="naive-date"),
        pytest.param(
            {"start_date": "2026-12-03T11:30:00Z", "end_date": "2026-12-03T11:30:00Z"},
            "must be after startDate",
            id="end-before-start",
        ),
    ],
)
def test_bad_reservations_are_refused_by_name(
    fake: FakeAws, fields: dict[str, Any], needle: str
) -> None:
    body: dict[str, Any] = {"zone": ZONE, "instance_type": TYPE, "count": 1, **fields}
    with pytest.raises(ValidationError) as err:
        fake.add_reservation("cr-bad", **body)
    assert needle in str(err.value)

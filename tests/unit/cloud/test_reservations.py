"""judge/choose: every verdict on a reservation, and a Job's list judged in order."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from atomic_gang import GangSpec, GoDuration
from atomic_gang_provisioner.cloud.reservation_fit import (
    BlockPolicy,
    Reservation,
    choose,
    judge,
    listed,
    span,
)

NOW = datetime(2026, 12, 3, 8, 18, tzinfo=UTC)
END = datetime(2026, 12, 4, 11, 30, tzinfo=UTC)
ZONES = frozenset({"us-east-1a", "us-east-1b"})
POLICY = BlockPolicy()


def spec(**fields: Any) -> GangSpec:
    base: dict[str, Any] = {
        "pool": "train",
        "count": 4,
        "instance_type": "p5.48xlarge",
        "mode": "runinstances",
        "region": "us-east-1",
        "node_role_arn": "arn:aws:iam::123456789012:role/n",
        "keep_warm_ttl": GoDuration.of(minutes=10),
        "max_lifetime": GoDuration.of(hours=4),
        "ami_variant": "nvidia",
        "capacity_reservation_id": "cr-a",
        **fields,
    }
    return GangSpec(**base)


def block(**fields: Any) -> Reservation:
    base: dict[str, Any] = {
        "reservation_id": "cr-a",
        "instance_type": "p5.48xlarge",
        "zone": "us-east-1a",
        "state": "active",
        "total": 4,
        "available": 4,
        "capacity_block": True,
        "start": NOW - timedelta(hours=1),
        "end": END,
        **fields,
    }
    return Reservation(**base)


def verdict(res: Reservation | None, *, now: datetime = NOW, **kw: Any) -> Any:
    kw.setdefault("placement_group_name", "mine")
    return judge(spec(**kw), res, reservation_id="cr-a", zones=ZONES, now=now, policy=POLICY)


@pytest.mark.parametrize(
    ("res", "needle"),
    [
        pytest.param(None, "cr-a does not exist", id="missing"),
        pytest.param(block(instance_type="p4d.24xlarge"), "instance type p4d.24xlarge", id="type"),
        pytest.param(block(zone="us-east-1c"), "AZ us-east-1c", id="zone"),
        pytest.param(block(tenancy="dedicated"), "tenancy dedicated", id="tenancy"),
        pytest.param(block(platform="Windows"), "platform Windows", id="platform"),
        pytest.param(block(total=2, available=2), "holds 2 instances", id="too-small"),
        pytest.param(
            block(placement_group_arn="arn:aws:ec2:us-east-1:1:placement-group/g"),
            "sits in placement group g; the gang asks for mine",
            id="placement-group",
        ),
        pytest.param(block(state="expired"), "expired (State)", id="expired"),
        pytest.param(block(state="cancelled"), "cancelled", id="cancelled"),
        pytest.param(block(state="failed"), "failed", id="failed"),
        pytest.param(block(state="payment-failed"), "payment-failed", id="payment-failed"),
        pytest.param(block(state="unsupported"), "unsupported", id="unsupported"),
    ],
)
def test_unfit_names_the_reservation_the_field_and_both_values(
    res: Reservation | None, needle: str
) -> None:
    v = verdict(res)
    assert (v.kind, v.code) == ("unfit", "CapacityReservationMismatch")
    assert needle in v.message
    assert v.message.startswith("cr-a")


def test_unfit_type_message_has_both_values() -> None:
    v = verdict(block(instance_type="p4d.24xlarge"))
    assert "p4d.24xlarge" in v.message
    assert "p5.48xlarge" in v.message
    assert "atomic-gang.k8s.aws/instance-type" in v.message


def test_zone_message_names_what_limits_the_zones() -> None:
    res = block(zone="us-east-1c")
    found = {"cr-a": res}
    pinned = choose(
        spec(availability_zones=("us-east-1a",)),
        found,
        zones={"us-east-1a"},
        now=NOW,
        policy=POLICY,
    )
    assert "atomic-gang.k8s.aws/availability-zones" in pinned.message
    cluster = choose(spec(), found, zones=ZONES, now=NOW, policy=POLICY)
    assert "the cluster's subnets" in cluster.message
    assert "us-east-1a, us-east-1b" in cluster.message


@pytest.mark.parametrize("state", ["scheduled", "payment-pending", "assessing", "delayed"])
def test_a_block_to_come_waits_with_its_start(state: str) -> None:
    start = NOW + timedelta(hours=3, minutes=12)
    v = verdict(block(state=state, start=start, available=0))
    assert v.kind == "waiting"
    assert v.starts_at == start
    assert v.message.startswith("Capacity Block cr-a starts at 2026-12-03T11:30:00Z (in 3h12m)")


def test_a_waiting_state_after_the_start_waits_without_a_time() -> None:
    v = verdict(block(state="payment-pending"))
    assert (v.kind, v.starts_at) == ("waiting", None)
    assert "is not active yet (payment-pending)" in v.message


def test_a_future_dated_odcr_waits_too() -> None:
    v = verdict(block(capacity_block=False, state="scheduled", start=NOW + timedelta(hours=1)))
    assert v.kind == "waiting"
    assert v.message.startswith("Capacity reservation cr-a starts at")


def test_an_active_state_before_the_start_date_is_trusted() -> None:
    """EC2's state is the truth; a skewed clock must not hold a live block back."""
    v = verdict(block(start=NOW + timedelta(seconds=5)))
    assert v.kind == "usable"


def test_a_block_past_its_drain_point_is_ending() -> None:
    v = verdict(block(), now=END - timedelta(minutes=39))
    assert (v.kind, v.code) == ("ending", "CapacityBlockEnding")


def test_a_block_with_too_little_time_left_is_too_short() -> None:
    drain = END - POLICY.drain_lead
    v = verdict(block(), now=drain - timedelta(minutes=29))
    assert (v.kind, v.code) == ("too-short", "CapacityBlockTooShort")
    assert "leaves 29m before its drain point 2026-12-04T10:50:00Z" in v.message
    assert "capacityBlock.minRemainingSeconds" in v.message
    assert verdict(block(), now=drain - timedelta(minutes=30)).kind == "usable"


def test_min_runtime_counts_from_the_start_of_a_block_to_come() -> None:
    start = END - timedelta(hours=2)
    policy = BlockPolicy(needed=timedelta(hours=2), needed_from="atomic-gang.k8s.aws/min-runtime")
    v = judge(
        spec(),
        block(state="scheduled", start=start),
        reservation_id="cr-a",
        zones=ZONES,
        now=NOW,
        policy=policy,
    )
    assert v.kind == "too-short"
    assert "leaves 1h20m" in v.message
    assert "min-runtime" in v.message


def test_an_odcr_has_no_drain_point() -> None:
    odcr = block(capacity_block=False, end=NOW + timedelta(minutes=1))
    assert verdict(odcr).kind == "usable"


@pytest.mark.parametrize(
    ("res", "needle"),
    [
        pytest.param(block(available=3), "3/4 available (active); the gang needs 4", id="count"),
        pytest.param(block(state="pending"), "(pending)", id="pending"),
    ],
)
def test_short_reads_the_count(res: Reservation, needle: str) -> None:
    v = verdict(res)
    assert (v.kind, v.code) == ("short", "ReservationCapacityShort")
    assert needle in v.message


def test_usable_says_what_is_available_and_when_it_ends() -> None:
    v = verdict(block())
    assert v.kind == "usable"
    assert v.message == "cr-a (4/4 available, ends 2026-12-04T11:30:00Z)"


def test_choose_keeps_the_jobs_order_and_knows_the_next_wake() -> None:
    later = NOW + timedelta(hours=2)
    found: dict[str, Reservation | None] = {
        "cr-a": block(available=1),
        "cr-b": replace(block(), reservation_id="cr-b", state="scheduled", start=later),
        "cr-c": replace(block(), reservation_id="cr-c"),
        "cr-d": None,
    }
    choice = choose(
        spec(capacity_reservation_id="cr-a,cr-b,cr-c,cr-d"),
        found,
        zones=ZONES,
        now=NOW,
        policy=POLICY,
    )
    assert [v.kind for v in choice.verdicts] == ["short", "waiting", "usable", "unfit"]
    assert [r.reservation_id for r in choice.usable] == ["cr-c"]
    assert choice.wake_at == later
    assert not choice.rejected
    assert "cr-c" not in choice.message


def test_choose_rejects_only_when_every_one_is_unfit() -> None:
    found: dict[str, Reservation | None] = {"cr-a": block(zone="us-east-1c"), "cr-b": None}
    choice = choose(
        spec(capacity_reservation_id="cr-a,cr-b"), found, zones=ZONES, now=NOW, policy=POLICY
    )
    assert choice.rejected
    assert choice.usable == ()
    assert choice.wake_at is None
    assert "cr-a is in AZ us-east-1c" in choice.message
    assert "cr-b does not exist" in choice.message
    assert not choose(
        spec(capacity_reservation_id=None), {}, zones=ZONES, now=NOW, policy=POLICY
    ).rejected


def test_listed_splits_trims_and_drops_repeats() -> None:
    assert listed(spec(capacity_reservation_id="cr-a, cr-b,cr-a")) == ("cr-a", "cr-b")
    assert listed(spec(capacity_reservation_id=None)) == ()


@pytest.mark.parametrize(
    ("seconds", "text"), [(11_520, "3h12m"), (3600, "1h00m"), (720, "12m"), (40, "40s"), (-5, "0s")]
)
def test_span(seconds: int, text: str) -> None:
    assert span(timedelta(seconds=seconds)) == text

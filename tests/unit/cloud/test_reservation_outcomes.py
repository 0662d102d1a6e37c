"""What the adapter answers when no listed reservation can take the gang now (no launch
call in any case), the shortfall message, the release-by cap and the reaper's use of it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from atomic_gang_provisioner.cloud.aws.reservation_book import unusable
from atomic_gang_provisioner.cloud.leaks import find_leaks
from atomic_gang_provisioner.cloud.reservation_fit import Reservation, choose, release_by
from atomic_gang_provisioner.cloud.values import (
    AwaitingReservation,
    PermanentFailure,
    Shortfall,
    ZoneAttempt,
)
from tests.unit.cloud.test_leaks import DEFAULT_LIFE, inst
from tests.unit.cloud.test_leaks import NOW as LEAK_NOW
from tests.unit.cloud.test_reservations import END, NOW, POLICY, ZONES, block, spec


def outcome(*res: Reservation) -> Shortfall | PermanentFailure | AwaitingReservation:
    found = {r.reservation_id: r for r in res}
    ids = ",".join(found)
    choice = choose(spec(capacity_reservation_id=ids), found, zones=ZONES, now=NOW, policy=POLICY)
    assert not choice.usable
    return unusable(choice)


LATER = block(reservation_id="cr-b", state="scheduled", start=NOW + timedelta(hours=3, minutes=12))
ENDED = block(end=NOW + timedelta(minutes=30))  # past its drain point (40 min lead)
SHORT = block(reservation_id="cr-s", capacity_block=False, end=None, available=3)
UNFIT = block(reservation_id="cr-u", instance_type="p4d.24xlarge")
TOO_SHORT = block(reservation_id="cr-t", end=NOW + timedelta(minutes=60))  # 20 min < 30 min


def test_all_unfit_rejects_the_job() -> None:
    out = outcome(UNFIT)
    assert isinstance(out, PermanentFailure)
    assert (out.reason, out.rejects) == ("CapacityReservationMismatch", True)
    assert "instance type p4d.24xlarge" in out.message


def test_a_later_block_is_waited_for_even_behind_an_ending_one() -> None:
    out = outcome(ENDED, LATER)
    assert isinstance(out, AwaitingReservation)
    assert out.starts_at == LATER.start
    assert out.message == "Capacity Block cr-b starts at 2026-12-03T11:30:00Z (in 3h12m)"


@pytest.mark.parametrize(
    ("res", "reason"),
    [
        pytest.param((TOO_SHORT,), "CapacityBlockTooShort", id="too-short"),
        pytest.param((ENDED,), "CapacityBlockEnding", id="ending"),
        pytest.param((UNFIT, TOO_SHORT), "CapacityBlockTooShort", id="unfit-and-too-short"),
    ],
)
def test_only_blocks_that_end_too_soon_give_retry_with_the_reason(
    res: tuple[Reservation, ...], reason: str
) -> None:
    out = outcome(*res)
    assert isinstance(out, PermanentFailure)
    assert (out.reason, out.rejects) == (reason, False)


def test_a_reservation_short_of_instances_is_a_shortfall_showing_the_count() -> None:
    out = outcome(TOO_SHORT, SHORT)
    assert isinstance(out, Shortfall)
    assert "cr-s: 3/4 available (active); the gang needs 4" in out.message
    assert "leaves 20m before its drain point" in out.message


def test_a_zone_shortfall_still_reads_zone_and_code() -> None:
    attempt = ZoneAttempt(zone="us-east-1a", code="InsufficientInstanceCapacity", message="x")
    assert Shortfall(attempts=(attempt,)).message == (
        "insufficient capacity (us-east-1a: InsufficientInstanceCapacity)"
    )


def test_release_by_gives_the_pods_time_and_beats_ec2() -> None:
    assert release_by(END, timedelta(minutes=40)) == END - timedelta(minutes=31)
    # a drain point closer to the end than EC2's margin: released at the drain point
    assert release_by(END, timedelta(minutes=30)) == END - timedelta(minutes=30)


def test_the_reaper_caps_a_block_instance_at_its_release_by_tag() -> None:
    due = inst(extra={"atomic-gang.k8s.aws/release-by": "2030-01-01T11:59:00Z"})
    later = inst("i-2", extra={"atomic-gang.k8s.aws/release-by": "2030-01-01T12:30:00Z"})
    bad = inst("i-3", extra={"atomic-gang.k8s.aws/release-by": "soon"})
    reaps = find_leaks([due, later, bad], now=LEAK_NOW, pools={}, default_max_lifetime=DEFAULT_LIFE)
    by_id = {r.instance_id: r for r in reaps}
    assert by_id["i-1"].reason == "max-lifetime"
    assert "drain point passed (release by 2030-01-01T11:59:00Z)" in by_id["i-1"].detail
    assert by_id["i-2"].reason == "orphaned"  # not due yet: only the usual rules apply
    assert by_id["i-3"].reason == "orphaned"  # a malformed tag is ignored

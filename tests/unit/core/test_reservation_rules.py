"""capacity-reservation-id as an ordered list, min-runtime, and capacityBlock settings:
each rule with the field, the value and the rule in its message."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from atomic_gang import GangValidationError, GoDuration, load_settings, validate_job
from atomic_gang import keys as k
from atomic_gang.settings import SettingsError
from tests.support.jobs import gang_job, settings

A, B, C = "cr-0123456789abcdef0", "cr-0fedcba9876543210", "cr-00000000"


def violations(s: Any = None, **annotations: str | None) -> list[Any]:
    try:
        validate_job(gang_job(annotations=annotations), s or settings())
    except GangValidationError as err:
        return list(err.violations)
    return []


@pytest.mark.parametrize(
    ("raw", "ids"),
    [
        pytest.param(A, (A,), id="one"),
        pytest.param(f"{A},{B}", (A, B), id="two-in-order"),
        pytest.param(f"{B}, {A} ,{C}", (B, A, C), id="spaces-kept-order"),
        pytest.param("", (), id="empty-is-on-demand"),
    ],
)
def test_a_list_of_reservations_resolves_in_order(raw: str, ids: tuple[str, ...]) -> None:
    spec = validate_job(gang_job(annotations={k.CAPACITY_RESERVATION_ID: raw}), settings())
    assert spec is not None
    assert spec.reservation_ids == ids
    assert spec.capacity_reservation_id == (",".join(ids) or None)


@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        pytest.param(f"{A},odcr-1", "'odcr-1' is not", id="bad-entry"),
        pytest.param(f"{A},", "'' is not", id="trailing-comma"),
        pytest.param(f"{A},{B},{A}", f"{A} is listed twice", id="duplicate"),
    ],
)
def test_a_bad_list_names_the_entry_and_the_rule(raw: str, rule: str) -> None:
    (v,) = violations(**{k.CAPACITY_RESERVATION_ID: raw})
    assert (v.key, v.reason, v.value) == (
        k.CAPACITY_RESERVATION_ID,
        "InvalidCapacityReservationId",
        raw,
    )
    assert rule in v.message


def test_the_allowlist_applies_to_each_listed_id() -> None:
    s = settings(allowedCapacityReservationIds=[A, "cr-0f*"])
    assert violations(s, **{k.CAPACITY_RESERVATION_ID: f"{A},{B}"}) == []
    (v,) = violations(s, **{k.CAPACITY_RESERVATION_ID: f"{A},{C}"})
    assert (v.reason, v.value) == ("CapacityReservationNotAllowed", C)


def test_min_runtime_is_a_go_duration() -> None:
    spec = validate_job(gang_job(annotations={k.MIN_RUNTIME: "1h30m"}), settings())
    assert spec is not None
    assert spec.min_runtime == GoDuration.of(hours=1, minutes=30)
    unset = validate_job(gang_job(), settings())
    assert unset is not None
    assert unset.min_runtime is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param("two hours", "InvalidDuration", id="not-a-duration"),
        pytest.param("0s", "InvalidMinRuntime", id="zero"),
        pytest.param("-1h", "InvalidMinRuntime", id="negative"),
    ],
)
def test_a_bad_min_runtime_names_the_field_and_value(raw: str, reason: str) -> None:
    (v,) = violations(**{k.MIN_RUNTIME: raw})
    assert (v.key, v.reason, v.value) == (k.MIN_RUNTIME, reason, raw)


def test_min_runtime_is_not_part_of_the_shape() -> None:
    a = validate_job(gang_job(annotations={k.MIN_RUNTIME: "2h"}), settings())
    b = validate_job(gang_job(), settings())
    assert a is not None
    assert b is not None
    assert a.shape_equals(b)


def test_capacity_block_settings_default_and_bounds() -> None:
    s = settings()
    assert (
        s.capacity_block.drain_lead_seconds,
        s.capacity_block.min_remaining_seconds,
        s.capacity_block.warning_lead_seconds,
    ) == (2400, 1800, 600)
    with pytest.raises(SettingsError, match=r"capacityBlock\.drainLeadSeconds"):
        load_settings(None, capacityBlock={"drainLeadSeconds": 1799})
    with pytest.raises(SettingsError, match=r"capacityBlock\.grace"):
        load_settings(None, capacityBlock={"grace": 1})


IDS = st.from_regex(r"\Acr-([0-9a-f]{8}|[0-9a-f]{17})\Z", fullmatch=True)


@hsettings(max_examples=25, deadline=None)
@given(ids=st.lists(IDS, min_size=1, max_size=6, unique=True), spaces=st.sampled_from(["", " "]))
def test_any_list_of_distinct_ids_resolves_in_its_order(ids: list[str], spaces: str) -> None:
    raw = ("," + spaces).join(ids)
    spec = validate_job(gang_job(annotations={k.CAPACITY_RESERVATION_ID: raw}), settings())
    assert spec is not None
    assert spec.reservation_ids == tuple(ids)


@hsettings(max_examples=25, deadline=None)
@given(ids=st.lists(IDS, min_size=1, max_size=5, unique=True), data=st.data())
def test_any_repeated_id_is_one_violation_naming_it(ids: list[str], data: st.DataObject) -> None:
    again = data.draw(st.sampled_from(ids))
    raw = ",".join([*ids, again])
    (v,) = violations(**{k.CAPACITY_RESERVATION_ID: raw})
    assert v.reason == "InvalidCapacityReservationId"
    assert f"{again} is listed twice" in v.message

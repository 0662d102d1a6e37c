"""Bounds on what a hostile Job can cost: reply size, echoed values, key count, durations."""

from __future__ import annotations

import re

import pytest

from atomic_gang import GangValidationError, patterns, validate_job
from atomic_gang import keys as k
from atomic_gang.durations import MAX_LENGTH, DurationError, GoDuration, _parse_short
from atomic_gang.errors import MAX_ECHO, MAX_VIOLATIONS, Collector
from tests.support.jobs import gang_job, settings

S = settings()


@pytest.mark.parametrize("text", ["\u0661h", "1\u0660m", "\uff11s", "\U0001d7d9h", "1.\u0665s"])
def test_durations_take_ascii_digits_only(text: str) -> None:
    with pytest.raises(DurationError):
        GoDuration.parse(text)


def test_long_duration_strings_are_refused_before_parsing_and_never_cached() -> None:
    before = _parse_short.cache_info().currsize
    valid_but_long = "0s" * 130_000 + "1h"  # 260 KB; Go would take it
    for i in range(50):
        with pytest.raises(DurationError, match=f"longer than {MAX_LENGTH}"):
            GoDuration.parse(valid_but_long + "0s" * i)
    assert _parse_short.cache_info().currsize == before
    assert GoDuration.parse("0s" * 31 + "1h") == GoDuration.of(hours=1)  # 64 characters


@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        pytest.param(patterns.REGION, "us-east-\u0661", id="region"),
        pytest.param(patterns.ROLE_ARN, "arn:aws:iam::" + "\u0661" * 12 + ":role/r", id="arn"),
        pytest.param(patterns.ROLE_ARN, "arn:aws:iam::123456789012:role/r\u00e9le", id="arn-name"),
        pytest.param(patterns.COUNT, "\u0664", id="count"),
    ],
)
def test_patterns_take_ascii_only(pattern: re.Pattern[str], value: str) -> None:
    assert pattern.match(value) is None


def test_zones_take_ascii_digits_only() -> None:
    assert not patterns.zone_syntax("us-east-\u0661a")
    assert not patterns.zone_in_region("us-east-1-bos-\u0661a", "us-east-1")


def test_collector_lists_the_first_violations_and_counts_the_rest() -> None:
    out = Collector()
    for i in range(MAX_VIOLATIONS + 7):
        out.add(f"k{i}", "UnknownKey", "m", "v" * 10_000)
    assert len(out.violations) == MAX_VIOLATIONS
    assert (out.omitted, out.total, out.full) == (7, MAX_VIOLATIONS + 7, True)
    value = out.violations[0].value
    assert value is not None
    assert len(value) == MAX_ECHO
    assert value.endswith("\u2026")


def test_unknown_key_storm_is_one_violation() -> None:
    job = gang_job()
    job["metadata"]["annotations"].update({f"{k.PREFIX}x{i}": "y" * 1000 for i in range(6000)})
    with pytest.raises(GangValidationError) as info:
        validate_job(job, S)
    assert info.value.reasons == ("TooManyKeys",)
    assert len(str(info.value)) < 1000


def test_many_typos_are_listed_up_to_the_cap_with_a_count() -> None:
    job = gang_job()
    job["metadata"]["annotations"].update({f"{k.PREFIX}x{i}": "y" for i in range(40)})
    with pytest.raises(GangValidationError) as info:
        validate_job(job, S)
    assert len(info.value.violations) == MAX_VIOLATIONS
    assert info.value.omitted == 40 - MAX_VIOLATIONS
    assert str(info.value).endswith(f"; and {40 - MAX_VIOLATIONS} more")
    assert str(info.value).startswith("40 gang annotation violations")

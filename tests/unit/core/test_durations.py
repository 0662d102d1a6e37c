"""Go duration parsing and formatting, including hypothesis round-trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang.durations import DurationError, GoDuration

NS = 1
S = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "ns", "canonical"),
    [
        pytest.param("15m", 15 * 60 * S, "15m0s", id="minutes"),
        pytest.param("1h30m", 90 * 60 * S, "1h30m0s", id="hours-minutes"),
        pytest.param("90s", 90 * S, "1m30s", id="seconds"),
        pytest.param("0", 0, "0s", id="zero"),
        pytest.param("1.5s", 1_500_000_000, "1.5s", id="fraction"),
        pytest.param(".5h", 1800 * S, "30m0s", id="leading-dot"),
        pytest.param("300ms", 300_000_000, "300ms", id="millis"),
        pytest.param("2us", 2000, "2\u00b5s", id="micros"),
        pytest.param("1\u03bcs", 1000, "1\u00b5s", id="greek-mu"),
        pytest.param("7ns", 7, "7ns", id="nanos"),
        pytest.param("-1m", -60 * S, "-1m0s", id="negative"),
        pytest.param("1h0m0s", 3600 * S, "1h0m0s", id="go-format"),
    ],
)
def test_parse_and_format_like_go(text: str, ns: int, canonical: str) -> None:
    d = GoDuration.parse(text)
    assert d.nanoseconds == ns
    assert str(d) == canonical


@pytest.mark.parametrize(
    "text", ["", "15", "m", "1d", "1 h", "1h 30m", "--1s", "1.2.3s", "9223372036854775808ns"]
)
def test_rejects_non_durations(text: str) -> None:
    with pytest.raises(DurationError):
        GoDuration.parse(text)


@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_format_then_parse_round_trips(ns: int) -> None:
    assert GoDuration.parse(str(GoDuration(ns))) == GoDuration(ns)


_UNIT = st.sampled_from(["ns", "us", "ms", "s", "m", "h"])
_TERM = st.tuples(st.integers(min_value=0, max_value=9999), _UNIT).map(lambda t: f"{t[0]}{t[1]}")


@given(st.lists(_TERM, min_size=1, max_size=4).map("".join))
def test_parse_then_format_is_canonical(text: str) -> None:
    d = GoDuration.parse(text)
    canonical = str(d)
    assert GoDuration.parse(canonical) == d
    assert str(GoDuration.parse(canonical)) == canonical


def test_conversions() -> None:
    d = GoDuration.of(hours=1, minutes=2, seconds=3)
    assert d.total_seconds() == 3723.0
    assert d.to_timedelta().total_seconds() == 3723.0
    assert GoDuration.of(minutes=1) < GoDuration.of(hours=1)

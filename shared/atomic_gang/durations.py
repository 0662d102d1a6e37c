"""Go ``time.Duration`` strings (``15m``, ``1h30m``, ``90s``) as a typed value.

Parsing follows Go's ``time.ParseDuration`` (ASCII digits only, like Go) and
formatting Go's ``Duration.String``, so a value round-trips between the chart, the
annotations and Go programs byte for byte. One deviation: input longer than
:data:`MAX_LENGTH` characters is refused before parsing, so a tenant's string can
neither cost unbounded work nor sit in the parse cache.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX = 2**63 - 1
_TERM = re.compile(r"([0-9]*)(?:\.([0-9]*))?([a-z\u00b5\u03bc]+)")
# "-2562047h47m16.854775807s" is 25 characters; 64 leaves room for any sane spelling.
MAX_LENGTH = 64
_SECOND = 1_000_000_000


class DurationError(ValueError):
    """A string that is not a Go duration."""


def _parse_ns(text: str) -> int:
    if len(text) > MAX_LENGTH:
        raise DurationError(f"invalid duration: longer than {MAX_LENGTH} characters")
    return _parse_short(text)


@lru_cache(maxsize=1024)  # pure; keys are at most MAX_LENGTH characters
def _parse_short(text: str) -> int:
    s = text
    sign = 1
    if s and s[0] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(s):
        m = _TERM.match(s, pos)
        if m is None or (not m.group(1) and not m.group(2)):
            raise DurationError(f"invalid duration {text!r}")
        whole, frac, unit = m.group(1), m.group(2) or "", m.group(3)
        scale = _UNITS.get(unit)
        if scale is None:
            raise DurationError(f"unknown unit {unit!r} in duration {text!r}")
        value = int(whole or "0") * scale
        if frac:
            # Exact integer arithmetic; Go truncates the fraction toward zero.
            value += int(frac) * scale // 10 ** len(frac)
        total += value
        if total > _MAX:
            raise DurationError(f"invalid duration {text!r}: out of range")
        pos = m.end()
    return sign * total


def _frac(value: int, precision: int) -> str:
    whole, rest = divmod(value, 10**precision)
    if rest == 0:
        return str(whole)
    digits = str(rest).rjust(precision, "0").rstrip("0")
    return f"{whole}.{digits}"


def _format_ns(ns: int) -> str:
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < _SECOND:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            return f"{sign}{_frac(u, 3)}\u00b5s"
        return f"{sign}{_frac(u, 6)}ms"
    hours, rem = divmod(u, 3600 * _SECOND)
    minutes, rem = divmod(rem, 60 * _SECOND)
    out = f"{hours}h{minutes}m" if hours else (f"{minutes}m" if minutes else "")
    return f"{sign}{out}{_frac(rem, 9)}s"


@dataclass(frozen=True, order=True, slots=True)
class GoDuration:
    """A duration held as integer nanoseconds, printed the way Go prints it."""

    nanoseconds: int

    @classmethod
    def parse(cls, text: str) -> GoDuration:
        return cls(_parse_ns(text))

    @classmethod
    def of(cls, *, hours: int = 0, minutes: int = 0, seconds: int = 0) -> GoDuration:
        return cls(((hours * 60 + minutes) * 60 + seconds) * _SECOND)

    def total_seconds(self) -> float:
        return self.nanoseconds / _SECOND

    def to_timedelta(self) -> timedelta:
        return timedelta(microseconds=self.nanoseconds // 1_000)

    def __str__(self) -> str:
        return _format_ns(self.nanoseconds)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def coerce(value: Any) -> GoDuration:
            if isinstance(value, GoDuration):
                return value
            if isinstance(value, str):
                return cls.parse(value.strip())
            raise DurationError("a Go duration must be a string such as '15m' or '1h30m'")

        return core_schema.no_info_plain_validator_function(
            coerce, serialization=core_schema.to_string_ser_schema()
        )

"""Violations with stable reason codes, the collector that gathers them, and the error
that carries them.

A :class:`Violation` names the key, the offending value, the rule that was broken and
a hint. Every broken rule is reported, up to :data:`MAX_VIOLATIONS` in full; the rest
are counted, and echoed keys and values are clipped to :data:`MAX_ECHO` characters, so
a hostile Job cannot turn a 3 MiB request into a 30 MB reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

MAX_VIOLATIONS = 20
MAX_ECHO = 128

Reason = Literal[
    "NotAGang",
    "UnknownKey",
    "WrongPlace",
    "IncompleteSet",
    "MissingRequired",
    "InvalidPoolName",
    "InvalidCount",
    "CountExceedsLimit",
    "CountMismatch",
    "InvalidInstanceType",
    "InstanceTypeNotAllowed",
    "InvalidMode",
    "InvalidRepair",
    "InvalidRegion",
    "RegionMismatch",
    "InvalidAvailabilityZone",
    "ZonesAndSubnetsExclusive",
    "InvalidSubnet",
    "InvalidNodeRoleArn",
    "NodeRoleNotAllowed",
    "InvalidDuration",
    "KeepWarmTTLOutOfRange",
    "InvalidMaxLifetime",
    "InvalidMinRuntime",
    "InvalidAmiVariant",
    "InvalidAmiId",
    "InvalidCapacityReservationId",
    "ReservedSelectorKey",
    "ImmutableGangField",
    "NotQueued",
    "AmiNotAllowed",
    "SubnetNotAllowed",
    "CapacityReservationNotAllowed",
    "MaxLifetimeExceedsLimit",
    "ReservedToleration",
    "TooManyKeys",
    "PodsNotSpread",
    "InvalidPlacement",
    "PlacementExclusive",
    "InvalidPlacementGroupName",
    "PlacementNeedsOneZone",
    "InvalidEfa",
    "InvalidMaxSpread",
    "ElasticGang",
    "PlacementGroupNotAllowed",
    "PoolReserved",
    "InvalidGangRoles",
]

REASONS: tuple[Reason, ...] = Reason.__args__  # type: ignore[attr-defined]


class Violation(NamedTuple):
    """One broken rule: where, what value, which rule, and what to do.

    Immutable like a frozen dataclass, and built in a quarter of the time: a denial
    makes one per broken rule on the webhook's hot path."""

    key: str
    reason: Reason
    message: str
    value: str | None = None
    hint: str = ""
    field: str = ""

    def render(self) -> str:
        """One line, as kubectl and the CLI show it."""
        key, reason, message, value, hint, _ = self  # one unpack, not five lookups
        shown = "" if value is None else f" (got {value!r})"
        return f"{key}: {message}{shown} [{reason}]{'; ' + hint if hint else ''}"


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass
class Collector:
    """Gathers violations: the first ``limit`` in full, the rest only counted."""

    limit: int = MAX_VIOLATIONS
    violations: list[Violation] = field(default_factory=list)
    omitted: int = 0

    @property
    def full(self) -> bool:
        """True once further violations are only counted (skip costly hints then)."""
        return len(self.violations) >= self.limit

    @property
    def total(self) -> int:
        return len(self.violations) + self.omitted

    def add(
        self,
        key: str,
        reason: Reason,
        message: str,
        value: str | None = None,
        hint: str = "",
        field_path: str = "",
    ) -> None:
        if self.full:
            self.omitted += 1
            return
        path = clip(field_path or f"metadata.annotations[{key}]", 2 * MAX_ECHO)
        shown = None if value is None else clip(value)
        # Messages and hints may quote lists (zones, allowlists): bounded as well.
        said, hint = clip(message, 4 * MAX_ECHO), clip(hint, 4 * MAX_ECHO)
        self.violations.append(Violation(clip(key), reason, said, shown, hint, path))


class GangValidationError(ValueError):
    """Raised with every violation of a Job's gang annotations (the first
    MAX_VIOLATIONS of them; ``omitted`` counts the rest)."""

    def __init__(self, violations: list[Violation], omitted: int = 0) -> None:
        if not violations:
            raise ValueError("GangValidationError needs at least one violation")
        self.violations: tuple[Violation, ...] = tuple(violations)
        self.omitted = omitted
        super().__init__()

    def __str__(self) -> str:  # rendered on demand: the webhook renders each line once
        return self.summary()

    @property
    def reasons(self) -> tuple[Reason, ...]:
        return tuple(v.reason for v in self.violations)

    def summary(self) -> str:
        lines = "; ".join(v.render() for v in self.violations)
        count = len(self.violations) + self.omitted
        noun = "violation" if count == 1 else "violations"
        more = f"; and {self.omitted} more" if self.omitted else ""
        return f"{count} gang annotation {noun}: {lines}{more}"

"""Violations with stable reason codes, and the error that carries them.

A :class:`Violation` names the key, the offending value, the rule that was
broken and a hint. :class:`GangValidationError` always carries *every*
violation found, never just the first.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

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
    "InvalidAmiVariant",
    "InvalidAmiId",
    "InvalidCapacityReservationId",
    "ReservedSelectorKey",
    "ImmutableGangField",
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


class GangValidationError(ValueError):
    """Raised with every violation of a Job's gang annotations."""

    def __init__(self, violations: list[Violation]) -> None:
        if not violations:
            raise ValueError("GangValidationError needs at least one violation")
        self.violations: tuple[Violation, ...] = tuple(violations)
        super().__init__()

    def __str__(self) -> str:  # rendered on demand: the webhook renders each line once
        return self.summary()

    @property
    def reasons(self) -> tuple[Reason, ...]:
        return tuple(v.reason for v in self.violations)

    def summary(self) -> str:
        lines = "; ".join(v.render() for v in self.violations)
        count = len(self.violations)
        noun = "violation" if count == 1 else "violations"
        return f"{count} gang annotation {noun}: {lines}"

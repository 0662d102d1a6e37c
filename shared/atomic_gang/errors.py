"""Violations with stable reason codes, and the error that carries them.

A :class:`Violation` names the key, the offending value, the rule that was
broken and a hint. :class:`GangValidationError` always carries *every*
violation found, never just the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: where, what value, which rule, and what to do."""

    key: str
    reason: Reason
    message: str
    value: str | None = None
    hint: str = ""
    field: str = ""

    def render(self) -> str:
        """One line, as kubectl and the CLI show it."""
        shown = "" if self.value is None else f" (got {self.value!r})"
        hint = f"; {self.hint}" if self.hint else ""
        return f"{self.key}: {self.message}{shown} [{self.reason}]{hint}"


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

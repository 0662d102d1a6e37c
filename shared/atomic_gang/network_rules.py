"""The network annotations: placement, placement-group-name, efa, max-spread.

Each rule appends to a :class:`Collector`; :func:`check_network` returns the resolved
GangSpec fields. What only EC2 can tell (does the type support EFA, how many
interfaces, does the security group allow its own traffic) the controller checks
before it launches; the rules here are the ones a Job can be told about at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from atomic_gang import keys, patterns
from atomic_gang.errors import Collector, Reason

PLACEMENTS: Final = ("cluster",)
# EC2 names a placement group with up to 255 ASCII characters.
GROUP_NAME: Final = re.compile(r"^[\x21-\x7e]{1,255}$", re.ASCII)
# The most EFA interfaces any type takes (p5.48xlarge, one per network card).
MAX_EFA: Final = 32


def _value(
    ann: Mapping[str, str],
    key: str,
    parse: Callable[[str], Any],
    out: Collector,
    *,
    reason: Reason,
    rule: str,
    hint: str,
) -> Any:
    """``parse(raw)``, or None (with a violation when ``parse`` refused a value)."""
    raw = ann.get(key)
    if raw is None:
        return None
    value = parse(raw)
    if value is None:
        out.add(key, reason, rule, raw, hint)
    return value


def _efa_count(raw: str) -> int | str | None:
    if raw == "true":
        return "max"
    return int(raw) if patterns.COUNT.match(raw) and int(raw) <= MAX_EFA else None


def _group_name(ann: Mapping[str, str], out: Collector) -> str | None:
    raw = ann.get(keys.PLACEMENT_GROUP_NAME)
    if raw is None:
        return None
    if not GROUP_NAME.match(raw):
        out.add(
            keys.PLACEMENT_GROUP_NAME,
            "InvalidPlacementGroupName",
            "must be an EC2 placement group name: 1 to 255 printable ASCII characters",
            raw,
            "the name of an existing placement group in the cluster's region",
        )
        return None
    if keys.PLACEMENT in ann:
        out.add(
            keys.PLACEMENT_GROUP_NAME,
            "PlacementExclusive",
            f"cannot be combined with {keys.PLACEMENT}",
            raw,
            f"{keys.PLACEMENT} makes a group the pool owns; {keys.PLACEMENT_GROUP_NAME} "
            "launches into an existing one: keep one of the two",
        )
        return None
    return raw


def _scalars(ann: Mapping[str, str], out: Collector) -> tuple[Any, Any, Any]:
    """placement, efa, max-spread."""
    placement = _value(
        ann,
        keys.PLACEMENT,
        lambda raw: raw if raw in PLACEMENTS else None,
        out,
        reason="InvalidPlacement",
        rule="must be one of " + ", ".join(PLACEMENTS),
        hint="cluster: the controller creates and owns a cluster placement group for the pool",
    )
    efa = _value(
        ann,
        keys.EFA,
        _efa_count,
        out,
        reason="InvalidEfa",
        rule=f'must be "true" (as many EFA interfaces as the type allows) or a count 1..{MAX_EFA}',
        hint='e.g. "true", or "1" for one interface per instance; remove the key for no EFA',
    )
    spread = _value(
        ann,
        keys.MAX_SPREAD,
        lambda raw: int(raw) if patterns.COUNT.match(raw) else None,
        out,
        reason="InvalidMaxSpread",
        rule="must be a positive integer: the bottom-layer network nodes a Ready gang may span",
        hint='e.g. "1": every instance under one network node',
    )
    return placement, efa, spread


def _one_zone(
    ann: Mapping[str, str], *, mode: str, zones: tuple[str, ...], subnets: tuple[str, ...]
) -> bool:
    """A cluster group lives in one AZ: a fleet (which may pick any of its overrides)
    must be given exactly one zone or one subnet."""
    if ann.get(keys.PLACEMENT) != "cluster" or mode != "fleet":
        return True
    return len(zones) == 1 or len(subnets) == 1


def check_network(
    ann: Mapping[str, str],
    *,
    mode: str,
    zones: tuple[str, ...],
    subnets: tuple[str, ...],
    out: Collector,
) -> dict[str, Any]:
    """The network GangSpec fields (None when unset or invalid; ``out`` says which)."""
    placement, efa, spread = _scalars(ann, out)
    if placement is not None and not _one_zone(ann, mode=mode, zones=zones, subnets=subnets):
        out.add(
            keys.PLACEMENT,
            "PlacementNeedsOneZone",
            f"with mode fleet needs {keys.AVAILABILITY_ZONES} of exactly one zone, or "
            f"{keys.SUBNETS} of exactly one subnet: a cluster placement group lives in one "
            "availability zone",
            placement,
            f"set {keys.AVAILABILITY_ZONES} to one zone (or {keys.SUBNETS} to one subnet), "
            f"or use {keys.MODE}: runinstances",
        )
        placement = None
    return {
        "placement": placement,
        "placement_group_name": _group_name(ann, out),
        "efa": efa,
        "max_spread": spread,
    }

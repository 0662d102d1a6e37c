"""The network annotations: placement, placement-group-name, efa, max-spread.

Each rule appends to a :class:`Collector`; :func:`check_network` returns the resolved
GangSpec fields. What only EC2 can tell (does the type support EFA, how many
interfaces, does the security group allow its own traffic) the controller checks
before it launches; the rules here are the ones a Job can be told about at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from atomic_gang import keys, patterns
from atomic_gang.errors import Collector

PLACEMENTS: Final = ("cluster",)
# EC2 names a placement group with up to 255 ASCII characters.
GROUP_NAME: Final = re.compile(r"^[\x21-\x7e]{1,255}$", re.ASCII)
# The most EFA interfaces any type takes (p5.48xlarge, one per network card).
MAX_EFA: Final = 32


def _placement(ann: Mapping[str, str], out: Collector) -> str | None:
    raw = ann.get(keys.PLACEMENT)
    if raw is None or raw in PLACEMENTS:
        return raw
    out.add(
        keys.PLACEMENT,
        "InvalidPlacement",
        "must be one of " + ", ".join(PLACEMENTS),
        raw,
        "cluster: the controller creates and owns a cluster placement group for the pool",
    )
    return None


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


def _efa(ann: Mapping[str, str], out: Collector) -> int | str | None:
    raw = ann.get(keys.EFA)
    if raw is None:
        return None
    if raw == "true":
        return "max"
    if patterns.COUNT.match(raw) and int(raw) <= MAX_EFA:
        return int(raw)
    out.add(
        keys.EFA,
        "InvalidEfa",
        f'must be "true" (as many EFA interfaces as the type allows) or a count 1..{MAX_EFA}',
        raw,
        'e.g. "true", or "1" for one interface per instance; remove the key for no EFA',
    )
    return None


def _max_spread(ann: Mapping[str, str], out: Collector) -> int | None:
    raw = ann.get(keys.MAX_SPREAD)
    if raw is None:
        return None
    if patterns.COUNT.match(raw):
        return int(raw)
    out.add(
        keys.MAX_SPREAD,
        "InvalidMaxSpread",
        "must be a positive integer: the bottom-layer network nodes a Ready gang may span",
        raw,
        'e.g. "1": every instance under one network node',
    )
    return None


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
    placement = _placement(ann, out)
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
        "efa": _efa(ann, out),
        "max_spread": _max_spread(ann, out),
    }

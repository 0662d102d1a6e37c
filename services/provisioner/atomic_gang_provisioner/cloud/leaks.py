"""Leaks: which listed managed instances must go (the reaper's pure half).

The adapter lists this cluster's managed instances in one paginated,
server-side-filtered call; :func:`find_leaks` then needs only that list, the
time and what the controller knows about its pools. Reasons, first match wins:
``max-lifetime`` (age over the instance's max-lifetime tag, or the default; for a
Capacity Block instance also its release-by tag: the drain point caps its lifetime),
``keep-warm-expired`` (KeepWarmUntil tag in the past), ``orphaned`` (no such
pool) and ``stray`` (a live pool whose status does not record it, whatever its
generation, past a grace period: a duplicate that must never bill). A set the
pool is acquiring (phase Acquiring, its generation) is never a stray: that is a
launch in flight or one whose response was lost, and the pool adopts it.
:func:`orphaned_groups` does the same for placement groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from atomic_gang import GoDuration
from atomic_gang_provisioner.cloud.values import Instance, PlacementGroup
from atomic_gang_provisioner.timestamps import rfc3339

ReapReason = Literal["max-lifetime", "keep-warm-expired", "orphaned", "stray"]
# Covers a launch whose status write is in flight, and the reaper's pool cache lagging
# behind that write: the instance is young and the cache may still show the set as
# unrecorded (or the pool in an older phase). Generous: EC2 answers in seconds.
STRAY_GRACE = timedelta(minutes=15)


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolView:
    """What the controller's status says a pool owns right now."""

    instance_ids: frozenset[str] = frozenset()
    # The generation the pool is acquiring (status.acquireGeneration while its phase is
    # Acquiring): a set tagged with it may be launched but not yet recorded, and the
    # pool will adopt it. None in every other phase.
    adopting: int | None = None
    # False when this replica cannot read the pool object (e.g. malformed): the pool
    # exists, so its instances are never orphans or strays, only age-limited.
    readable: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Reap:
    instance_id: str
    reason: ReapReason
    detail: str


def _reason(
    inst: Instance,
    *,
    now: datetime,
    pools: Mapping[str, PoolView],
    default_max_lifetime: GoDuration,
    stray_grace: timedelta,
    keep_warm_grace: timedelta,
) -> tuple[ReapReason, str] | None:
    age = now - inst.launch_time
    life = inst.max_lifetime or default_max_lifetime
    if age > life.to_timedelta():
        return "max-lifetime", f"age {age} exceeds max lifetime {life}"
    cap = inst.release_by
    if cap is not None and cap <= now:
        return (
            "max-lifetime",
            f"its Capacity Block's drain point passed (release by {rfc3339(cap)})",
        )
    until = inst.keep_warm_until
    if until is not None and until + keep_warm_grace < now:
        return "keep-warm-expired", f"keep-warm ended at {until.isoformat()}"
    pool = inst.pool
    if pool is None or pool not in pools:
        return "orphaned", f"pool {pool!r} does not exist"
    return _stray(inst, pools[pool], age=age, stray_grace=stray_grace)


def _stray(
    inst: Instance, view: PoolView, *, age: timedelta, stray_grace: timedelta
) -> tuple[ReapReason, str] | None:
    gen = inst.generation
    if not view.readable or inst.instance_id in view.instance_ids:
        return None
    if view.adopting is not None and gen == view.adopting:
        return None  # the pool's own launch, not recorded yet: it adopts this set
    if age <= stray_grace:
        return None
    return "stray", f"generation {gen} is not recorded by pool {inst.pool!r}"


def find_leaks(
    instances: Iterable[Instance],
    *,
    now: datetime,
    pools: Mapping[str, PoolView],
    default_max_lifetime: GoDuration,
    stray_grace: timedelta = STRAY_GRACE,
    keep_warm_grace: timedelta = timedelta(0),
) -> tuple[Reap, ...]:
    """The instances to terminate, each with its reason; live managed ones only."""
    out: list[Reap] = []
    for inst in instances:
        if not inst.live or not inst.managed:
            continue
        found = _reason(
            inst,
            now=now,
            pools=pools,
            default_max_lifetime=default_max_lifetime,
            stray_grace=stray_grace,
            keep_warm_grace=keep_warm_grace,
        )
        if found is not None:
            out.append(Reap(instance_id=inst.instance_id, reason=found[0], detail=found[1]))
    return tuple(out)


def orphaned_groups(
    groups: Iterable[PlacementGroup], *, pools: Mapping[str, PoolView]
) -> tuple[PlacementGroup, ...]:
    """Managed placement groups whose pool no longer exists (a pool this replica cannot
    read still exists). Deleting one still in use fails InUse and is tried next sweep;
    one deleted between its pool's create and launch is made again by that pool."""
    return tuple(g for g in groups if g.pool is None or g.pool not in pools)

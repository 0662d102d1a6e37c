"""The reaper's pure half: decide which listed managed instances must go.

The adapter lists this cluster's managed instances in one paginated,
server-side-filtered call; :func:`classify` then needs only that list, the
time and what the controller knows about its pools. Reasons, first match wins:
``max-lifetime`` (age over the instance's max-lifetime tag, or the default),
``keep-warm-expired`` (KeepWarmUntil tag in the past), ``orphaned`` (no such
pool) and ``stray`` (a known pool that does not own it, from an older
generation, past a grace period: a duplicate that must never bill).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from atomic_gang import GoDuration
from atomic_gang_provisioner.cloud.types import Instance

ReapReason = Literal["max-lifetime", "keep-warm-expired", "orphaned", "stray"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolView:
    """What the controller's status says a pool owns right now."""

    generation: int | None = None
    instance_ids: frozenset[str] = frozenset()
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
    until = inst.keep_warm_until
    if until is not None and until + keep_warm_grace < now:
        return "keep-warm-expired", f"keep-warm ended at {until.isoformat()}"
    pool = inst.pool
    if pool is None or pool not in pools:
        return "orphaned", f"pool {pool!r} does not exist"
    view = pools[pool]
    if not view.readable:
        return None
    gen = inst.generation
    if (
        view.generation is not None
        and inst.instance_id not in view.instance_ids
        and (gen is None or gen < view.generation)
        and age > stray_grace
    ):
        return "stray", f"generation {gen} is not pool {pool!r}'s active set"
    return None


def classify(
    instances: Iterable[Instance],
    *,
    now: datetime,
    pools: Mapping[str, PoolView],
    default_max_lifetime: GoDuration,
    stray_grace: timedelta = timedelta(minutes=15),
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

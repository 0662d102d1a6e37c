"""Which namespace may claim a pool: pools belong to namespaces (``atomic_gang.pool_access``).

A claimant from another namespace never gets a pool that still holds something of its
owner: instances (Nodes that ran the owner's pods, its images in their caches, its
capacity reservation) or a live claim. It is refused with Retry, so that it waits
without holding quota and is never deactivated for good by a name it does not own.
Once the pool holds no instance and no claim, nothing of the owner is left in it and
its ownership lapses to the next claimant. A name the admin lists for some namespaces
is for them only, and they share it. A warm set that runs in a capacity reservation is
taken only by a namespace that may use the reservation (allowedCapacityReservationIds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from atomic_gang import GangSettings, patterns
from atomic_gang.pool_access import listed_for
from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.workload.plan import Claimant

Access = Literal["owner", "reserved", "taken", "lapsed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """How a namespace stands to a pool name, with what its check is told where it may
    not take the pool."""

    access: Access
    refused: str = ""  # reserved for other namespaces: Rejected with this
    waits: str = ""  # another namespace's instances or claim are in it: Retry with this
    # The warm set runs in a reservation this namespace may not use: Retry with this.
    reservation: str = ""


def standing(
    pool: GangNodePool | None,
    *,
    holds_nothing: bool,
    name: str,
    namespace: str,
    claimant: Claimant,
    settings: GangSettings,
    retry_seconds: int,
) -> Standing:
    """How ``namespace`` stands to pool ``name`` (None: the pool does not exist yet;
    ``holds_nothing``: what its conditions report)."""
    found = access(
        pool,
        holds_nothing=holds_nothing,
        name=name,
        namespace=namespace,
        claimant=claimant,
        settings=settings,
    )
    refused = reserved(name) if found == "reserved" else ""
    waits = taken(name, retry_seconds) if found == "taken" else ""
    reservation = (
        ""
        if may_use_reservation(pool, holds_nothing, settings)
        else (
            f"Pool {name}'s warm set runs in a capacity reservation this namespace may not "
            f"use (allowedCapacityReservationIds); releasing quota and retrying in "
            f"{retry_seconds}s"
        )
    )
    return Standing(access=found, refused=refused, waits=waits, reservation=reservation)


def access(
    pool: GangNodePool | None,
    *,
    holds_nothing: bool,
    name: str,
    namespace: str,
    claimant: Claimant,
    settings: GangSettings,
) -> Access:
    """How ``namespace`` stands to pool ``name`` (None: the pool does not exist yet)."""
    listed = listed_for(name, settings.pool_namespaces)
    if listed is not None:
        return "owner" if namespace in listed else "reserved"
    if pool is None or pool.spec.ownerNamespace in (None, namespace):
        return "owner"
    claimed = pool.spec.claim is not None and claimant == "active"
    if holds_nothing and not claimed:
        return "lapsed"
    return "taken"


def may_use_reservation(
    pool: GangNodePool | None, holds_nothing: bool, settings: GangSettings
) -> bool:
    """Whether the namespace (``settings`` are its own) may run in the reservation the
    pool's live set runs in."""
    held = pool.status.reservationId if pool is not None else ""
    if not held or holds_nothing:
        return True
    return patterns.allowed(held, settings.allowed_capacity_reservation_ids)


def reserved(name: str) -> str:
    return (
        f"Pool name {name!r} is reserved for other namespaces by the cluster's admin "
        "(poolNamespaces); use a pool label of your own"
    )


def taken(name: str, retry_seconds: int) -> str:
    return (
        f"Pool name {name!r} belongs to another namespace; releasing quota and retrying in "
        f"{retry_seconds}s. Use a pool label of your own"
    )

"""Which pool a Workload's ``pool`` label names, and how its namespace stands to it.

Pools belong to namespaces by their names (``atomic_gang.pool_access``): a namespace's
label names ``<namespace>.<label>``, which no other namespace can name, so no claimant
from another namespace ever reaches it. Two kinds of pool still carry a bare label as
their name:

- a name the admin lists (``poolNamespaces``): for the listed namespaces only, which
  share it; every other namespace is Rejected.
- a pool from before names were per namespace (``legacy``). It goes on serving its owner
  while it holds something (a live gang keeps running, a warm set is reused), and a
  Workload that holds its claim; once it holds nothing its owner's next Workload creates
  ``<namespace>.<label>``. A legacy pool with no recorded owner is adopted by the
  namespace of the Workload that holds its claim; no other namespace takes it, and its
  warm set is released at once (``pool.phases.keepwarm``).

A warm set that runs in a capacity reservation is taken only by a namespace that may use
the reservation (allowedCapacityReservationIds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from atomic_gang import GangSettings, patterns
from atomic_gang.pool_access import listed_for, namespaced, object_name
from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api import conditions as reported

Access = Literal["owner", "reserved", "taken"]


def pool_name(
    label: str,
    *,
    namespace: str,
    workload_uid: str,
    settings: GangSettings,
    legacy: GangNodePool | None,
) -> str:
    """The GangNodePool ``namespace``'s ``pool`` label names for one Workload:
    ``legacy`` (the pool named by the bare label, if any) while it serves this
    namespace, else the label's own name (listed, or ``<namespace>.<label>``)."""
    named = object_name(label, namespace, settings.pool_namespaces)
    if legacy is None or named == label:
        return named
    claim = legacy.spec.claim
    if claim is not None and claim.uid == workload_uid:
        return label  # this Workload holds it: its gang (or the launch for it) is there
    owner = legacy.spec.ownerNamespace
    if owner == namespace and not reported.holds_nothing(legacy):
        return label  # its owner's live gang or warm set
    return named


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """How a namespace stands to a pool name, with what its check is told where it may
    not take the pool."""

    access: Access
    refused: str = ""  # never this namespace's: Rejected with this
    # The warm set runs in a reservation this namespace may not use: Retry with this.
    reservation: str = ""


def standing(
    pool: GangNodePool | None,
    *,
    holds_nothing: bool,
    name: str,
    namespace: str,
    settings: GangSettings,
    retry_seconds: int,
) -> Standing:
    """How ``namespace`` stands to pool ``name`` (None: the pool does not exist yet;
    ``holds_nothing``: what its conditions report)."""
    found = access(pool, name=name, namespace=namespace, settings=settings)
    refused = {"reserved": reserved(name), "taken": taken(name)}.get(found, "")
    reservation = (
        ""
        if may_use_reservation(pool, holds_nothing, settings)
        else (
            f"Pool {name}'s warm set runs in a capacity reservation this namespace may not "
            f"use (allowedCapacityReservationIds); releasing quota and retrying in "
            f"{retry_seconds}s"
        )
    )
    return Standing(access=found, refused=refused, reservation=reservation)


def access(
    pool: GangNodePool | None,
    *,
    name: str,
    namespace: str,
    settings: GangSettings,
) -> Access:
    """How ``namespace`` stands to pool ``name`` (None: the pool does not exist yet). A
    pool with no recorded owner is reached only by the Workload that holds its claim
    (``pool_name``), whose namespace adopts it."""
    # A namespace's own name is never listed, whatever a pattern's '*' would match.
    listed = None if namespaced(name) else listed_for(name, settings.pool_namespaces)
    if listed is not None:
        return "owner" if namespace in listed else "reserved"
    if pool is None or pool.spec.ownerNamespace in (None, namespace):
        return "owner"
    # Another namespace's: unreachable through a label but by a hash collision of two
    # long names, or a listing the admin took back. Never lapses to this namespace.
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


def taken(name: str) -> str:
    return (
        f"Pool {name!r} belongs to another namespace (the admin no longer lists this "
        "namespace for it, or two long names met); use another pool label"
    )

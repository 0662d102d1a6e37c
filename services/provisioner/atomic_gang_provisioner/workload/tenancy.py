"""Which namespace may claim a pool: pools belong to namespaces (``atomic_gang.pool_access``).

A claimant from another namespace never gets a pool that still holds something of its
owner: instances (Nodes that ran the owner's pods, its images in their caches, its
capacity reservation) or a live claim. It is refused with Retry, so that it waits
without holding quota and is never deactivated for good by a name it does not own.
Once the pool holds no instance and no claim, nothing of the owner is left in it and
its ownership lapses to the next claimant. A name the admin lists for some namespaces
is for them only, and they share it.
"""

from __future__ import annotations

from typing import Literal

from atomic_gang import GangSettings
from atomic_gang.pool_access import listed_for
from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api import conditions as reported
from atomic_gang_provisioner.workload.plan import Claimant

Access = Literal["owner", "reserved", "taken", "lapsed"]


def access(
    pool: GangNodePool | None,
    *,
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
    if reported.holds_nothing(pool) and not claimed:
        return "lapsed"
    return "taken"


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

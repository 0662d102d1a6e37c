"""What a Job author may pick is the cluster admin's call.

An image boots with the node role and joins the cluster as a node, a subnet or a
capacity reservation may be another team's, and a lifetime bills. Each of these
checks runs after the value's syntax passed; an empty allowlist (the default) allows
any value, but for placement groups (``placement_group``). The webhook and the
provisioner both call them, through :func:`atomic_gang.rules.check_scalars`.
"""

from __future__ import annotations

from atomic_gang import keys, patterns
from atomic_gang.durations import GoDuration
from atomic_gang.errors import Collector, Reason
from atomic_gang.settings import GangSettings


def _listing(setting: str) -> str:
    """Where the allowed values are, never what they are: an allowlist of images, subnets,
    reservations or roles names other teams' resources and the account's."""
    return f"the allowed values are the cluster admin's ({setting}): ask them which to use"


def _one(
    raw: str | None,
    allowlist: tuple[str, ...],
    out: Collector,
    *,
    key: str,
    setting: str,
    reason: Reason,
    why: str,
    hint: str,
) -> str | None:
    """``raw`` if it is unset or allowed; else a violation naming the setting."""
    if raw is None or patterns.allowed(raw, allowlist):
        return raw
    out.add(key, reason, why, raw, _listing(setting) + hint)
    return None


def ami(raw: str | None, s: GangSettings, out: Collector) -> str | None:
    return _one(
        raw,
        s.allowed_ami_ids,
        out,
        key=keys.AMI_ID,
        setting="allowedAmiIds",
        reason="AmiNotAllowed",
        why="is not in allowedAmiIds (an image boots with the node role and joins as a node)",
        hint=f"; or leave {keys.AMI_ID} unset for the EKS-optimized AMI",
    )


def subnets(raw: str, chosen: tuple[str, ...], s: GangSettings, out: Collector) -> tuple[str, ...]:
    outside = [x for x in chosen if not patterns.allowed(x, s.allowed_subnets)]
    if not outside:
        return chosen
    out.add(
        keys.SUBNETS,
        "SubnetNotAllowed",
        f"{', '.join(outside)} not in allowedSubnets",
        raw,
        _listing("allowedSubnets") + f"; or use {keys.AVAILABILITY_ZONES}",
    )
    return ()


def reservation(raw: str | None, s: GangSettings, out: Collector) -> str | None:
    return _one(
        raw,
        s.allowed_capacity_reservation_ids,
        out,
        key=keys.CAPACITY_RESERVATION_ID,
        setting="allowedCapacityReservationIds",
        reason="CapacityReservationNotAllowed",
        why="is not in allowedCapacityReservationIds",
        hint="; or leave it unset for on-demand capacity",
    )


# The prefix of the placement groups the provisioner makes for pools (placement: cluster).
MANAGED_GROUP_PREFIX = "atomic-gang-"


def placement_group(raw: str | None, s: GangSettings, out: Collector) -> str | None:
    """Unlike the other lists, an empty allowedPlacementGroups allows no group: a group
    may hold another team's instances (room taken from its gang, its release failing on
    a group still in use). A group the provisioner manages is a pool's own, reached
    only through ``placement: cluster``, whatever the list says."""
    if raw is None:
        return raw
    hint = f"; or use {keys.PLACEMENT}: cluster for a group of the pool's own"
    if raw.startswith(MANAGED_GROUP_PREFIX):
        why = "is a placement group the provisioner manages for a pool, never named by a Job"
        out.add(keys.PLACEMENT_GROUP_NAME, "PlacementGroupNotAllowed", why, raw, hint[2:])
        return None
    if not s.allowed_placement_groups:
        why = "names a placement group, and allowedPlacementGroups lists none (the default)"
        out.add(keys.PLACEMENT_GROUP_NAME, "PlacementGroupNotAllowed", why, raw, hint[2:])
        return None
    return _one(
        raw,
        s.allowed_placement_groups,
        out,
        key=keys.PLACEMENT_GROUP_NAME,
        setting="allowedPlacementGroups",
        reason="PlacementGroupNotAllowed",
        why="is not in allowedPlacementGroups (a group may hold another team's instances)",
        hint=hint,
    )


def lifetime(raw: str, life: GoDuration, s: GangSettings, out: Collector) -> GoDuration | None:
    cap = s.limits.max_lifetime
    if life.nanoseconds <= cap.nanoseconds:
        return life
    out.add(
        keys.MAX_LIFETIME,
        "MaxLifetimeExceedsLimit",
        f"must be <= limits.maxLifetime ({cap})",
        raw,
        "the reaper terminates the nodes at this age; ask an admin to raise limits.maxLifetime",
    )
    return None

"""What a Job author may pick is the cluster admin's call.

An image boots with the node role and joins the cluster as a node, a subnet or a
capacity reservation may be another team's, and a lifetime bills. Each of these
checks runs after the value's syntax passed; an empty allowlist (the default) allows
any value. The webhook and the provisioner both call them,
through :func:`atomic_gang.rules.check_scalars`.
"""

from __future__ import annotations

from atomic_gang import keys, patterns
from atomic_gang.durations import GoDuration
from atomic_gang.errors import Collector, clip
from atomic_gang.settings import GangSettings


def _listing(allowlist: tuple[str, ...]) -> str:
    return clip("allowed: " + ", ".join(allowlist), 512)


def ami(raw: str | None, s: GangSettings, out: Collector) -> str | None:
    if raw is None or patterns.allowed(raw, s.allowedAmiIds):
        return raw
    out.add(
        keys.AMI_ID,
        "AmiNotAllowed",
        "is not in allowedAmiIds (an image boots with the node role and joins as a node)",
        raw,
        _listing(s.allowedAmiIds) + f"; or leave {keys.AMI_ID} unset for the EKS-optimized AMI",
    )
    return None


def subnets(raw: str, chosen: tuple[str, ...], s: GangSettings, out: Collector) -> tuple[str, ...]:
    outside = [x for x in chosen if not patterns.allowed(x, s.allowedSubnets)]
    if not outside:
        return chosen
    out.add(
        keys.SUBNETS,
        "SubnetNotAllowed",
        f"{', '.join(outside)} not in allowedSubnets",
        raw,
        _listing(s.allowedSubnets) + f"; or use {keys.AVAILABILITY_ZONES}",
    )
    return ()


def reservation(raw: str | None, s: GangSettings, out: Collector) -> str | None:
    if raw is None or patterns.allowed(raw, s.allowedCapacityReservationIds):
        return raw
    out.add(
        keys.CAPACITY_RESERVATION_ID,
        "CapacityReservationNotAllowed",
        "is not in allowedCapacityReservationIds",
        raw,
        _listing(s.allowedCapacityReservationIds) + "; or leave it unset for on-demand capacity",
    )
    return None


def lifetime(raw: str, life: GoDuration, s: GangSettings, out: Collector) -> GoDuration | None:
    cap = s.limits.maxLifetime
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

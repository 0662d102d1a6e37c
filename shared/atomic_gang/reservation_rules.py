"""The rule of ``capacity-reservation-id``: one id or an ordered, comma-separated list.

Each entry must be a ``cr-…`` id, the entries distinct, and each one inside the
admin's ``allowedCapacityReservationIds``. ``""`` means on-demand, as when the key
is absent. Whether a reservation fits the gang is EC2's to say (the provisioner
describes it before any launch); this checks only what the Job itself can get wrong.
"""

from __future__ import annotations

from collections.abc import Mapping

from atomic_gang import allowlists, keys, patterns
from atomic_gang.errors import Collector
from atomic_gang.settings import GangSettings

EXAMPLE = "cr-0123456789abcdef0 or cr-0123456789abcdef0,cr-0fedcba9876543210"


def reservations(ann: Mapping[str, str], s: GangSettings, out: Collector) -> str | None:
    """The list, normalised (``cr-a,cr-b``), or None when unset, empty or invalid."""
    raw = ann.get(keys.CAPACITY_RESERVATION_ID)
    if raw is None or raw == "":
        return None
    ids = [part.strip() for part in raw.split(",")]
    bad = [i for i in ids if not patterns.CAPACITY_RESERVATION_ID.match(i)]
    key = keys.CAPACITY_RESERVATION_ID
    if bad:
        shown = ", ".join(repr(b) for b in bad)
        out.add(
            key,
            "InvalidCapacityReservationId",
            f"every entry must be a cr-… id ({shown} is not)",
            raw,
            f"e.g. {EXAMPLE}",
        )
        return None
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        out.add(
            key,
            "InvalidCapacityReservationId",
            f"the entries must be distinct ({', '.join(twice)} is listed twice)",
            raw,
            "list each reservation once, in the order to try them",
        )
        return None
    allowed = [allowlists.reservation(i, s, out) for i in ids]
    return ",".join(ids) if None not in allowed else None

"""Deterministic names: ClientTokens, group ids, launch templates, instance profiles,
placement groups, tags.

Everything here is a pure function of its inputs, so a restarted controller
derives exactly the same token for the same (pool, generation, AZ) and EC2's
idempotency hands back the original launch instead of a second one.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from atomic_gang import GangSpec, keys, patterns

TOKEN_MAX: Final = 64
PROFILE_MAX: Final = 128
TEMPLATE_MAX: Final = 128
PLACEMENT_GROUP_MAX: Final = 255
LABEL_VALUE_MAX: Final = 63
PROFILE_PREFIX: Final = "atomic-gang-instance-profile-"
FLEET_ZONE: Final = "fleet"


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _fit(text: str, limit: int) -> str:
    """``text`` itself when it fits, else a prefix plus a hash of the whole."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 9]}-{_digest(text, 8)}"


def client_token(*, pool: str, generation: int, zone: str, reservation: str = "") -> str:
    """EC2 ClientToken for one launch attempt: ≤64 ASCII chars, stable across restarts.

    ``zone`` is the AZ for RunInstances (idempotency is zonal) or ``fleet``;
    ``reservation`` the ODCR or block targeted, so that trying the next listed
    one in the same AZ is a new request, not a parameter mismatch.
    """
    if generation < 0:
        raise ValueError("generation must be >= 0")
    where = f"{zone}-{reservation}" if reservation else zone
    readable = f"ag-{pool}-g{generation}-{where}"
    if len(readable) <= TOKEN_MAX:
        return readable
    tail = f"-g{generation}-{zone}-{_digest(readable, 10)}"
    return f"ag-{pool[: max(0, TOKEN_MAX - 3 - len(tail))]}{tail}"


def group_id(*, pool: str, generation: int) -> str:
    """The acquisition group: a label value (≤63) unique per (pool, generation)."""
    return _fit(f"{pool}-g{generation}", LABEL_VALUE_MAX)


def instance_profile_name(*, cluster: str, node_role_arn: str) -> str:
    """``atomic-gang-instance-profile-<cluster>-<role-name>``, hash-truncated at 128."""
    role = patterns.role_name(node_role_arn)
    if role is None:
        raise ValueError(f"not an IAM role ARN: {node_role_arn!r}")
    return _fit(f"{PROFILE_PREFIX}{cluster}-{role}", PROFILE_MAX)


def launch_template_name(*, cluster: str, spec: GangSpec) -> str:
    """One launch template per pool shape; the hash changes when the shape does."""
    name = f"atomic-gang-{cluster}-{spec.pool}-{spec.shape_hash()}"
    return _fit(re.sub(r"[^a-zA-Z0-9().\-/_]", "-", name), TEMPLATE_MAX)


def shared_template_name(*, cluster: str, data_digest: str) -> str:
    """One launch template per launch-template shape (AMI, type, profile, security
    group, EFA interfaces), shared by every runinstances pool of that shape: the per-pool
    parts (user data with the pool's labels, tags, placement group) go with each
    RunInstances."""
    return _fit(f"atomic-gang-{cluster}-shape-{data_digest}", TEMPLATE_MAX)


def placement_group_name(*, cluster: str, pool: str) -> str:
    """The pool's own placement group, the same across generations and restarts:
    ``atomic-gang-<cluster>-<pool>-<digest>`` (the digest of both keeps ``a-b``/``c``
    apart from ``a``/``b-c``), hash-truncated at EC2's 255."""
    return _fit(
        f"atomic-gang-{cluster}-{pool}-{_digest(cluster + '/' + pool, 8)}", PLACEMENT_GROUP_MAX
    )


def cluster_tags(*, cluster: str) -> dict[str, str]:
    """Tags on everything we create, so the reaper and IAM conditions can see it."""
    return {keys.MANAGED: "true", keys.CLUSTER: cluster}


def ownership_tags(*, cluster: str, pool: str) -> dict[str, str]:
    """Tags on everything we create for one pool."""
    return {**cluster_tags(cluster=cluster), keys.POOL: pool}


def group_tags(
    *, cluster: str, spec: GangSpec, generation: int, group: str | None = None
) -> dict[str, str]:
    """Tags on each launched instance, its volumes and its ENIs (``group``: a repair's
    replacements join the gang's group; by default the generation's own)."""
    return {
        **ownership_tags(cluster=cluster, pool=spec.pool),
        keys.GROUP: group or group_id(pool=spec.pool, generation=generation),
        keys.GENERATION: str(generation),
        keys.MAX_LIFETIME_TAG: str(spec.max_lifetime),
        f"kubernetes.io/cluster/{cluster}": "owned",
        "Name": _fit(f"atomic-gang/{spec.pool}/g{generation}", 255),
    }


def node_labels(*, spec: GangSpec, generation: int, group: str | None = None) -> dict[str, str]:
    """Labels kubelet registers the node with (see userdata); ``group`` as in group_tags."""
    return {
        keys.POOL: spec.pool,
        keys.GROUP: group or group_id(pool=spec.pool, generation=generation),
        keys.GENERATION: str(generation),
        keys.MANAGED: "true",
    }

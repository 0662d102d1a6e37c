"""GangSpec: a Job's gang shape with every default resolved.

Frozen and hashable. :meth:`GangSpec.shape_equals` decides whether a later
claimant may reuse a pool: keep-warm TTL, min-runtime (and the capacity reservations
used for the launch) may differ between sequential claimants; nothing else may.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from atomic_gang.durations import GoDuration

Mode = Literal["runinstances", "fleet"]
AmiVariant = Literal["standard", "nvidia", "neuron"]
Placement = Literal["cluster"]
# "max": as many EFA interfaces as the type's EfaInfo.MaximumEfaInterfaces (the controller
# reads it from DescribeInstanceTypes); a number: that many, one per network card.
Efa = int | Literal["max"]

NETWORK = frozenset({"placement", "placementGroupName", "efa", "maxSpread"})
MODES: tuple[Mode, ...] = ("runinstances", "fleet")
AMI_VARIANTS: tuple[AmiVariant, ...] = ("standard", "nvidia", "neuron")
Repair = Literal["auto", "never"]
REPAIRS: tuple[Repair, ...] = ("auto", "never")


def derive_ami_variant(instance_type: str) -> AmiVariant:
    """``p``/``g`` families run the NVIDIA image, ``inf``/``trn`` the Neuron one."""
    family = instance_type.split(".", 1)[0]
    if family.startswith(("inf", "trn")):
        return "neuron"
    if family.startswith(("p", "g")):
        return "nvidia"
    return "standard"


class GangSpec(BaseModel):
    """The resolved, validated gang request of one Job."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool: str
    count: int
    instance_type: str
    mode: Mode
    region: str
    availability_zones: tuple[str, ...] = ()
    subnets: tuple[str, ...] = ()
    node_role_arn: str
    keep_warm_ttl: GoDuration
    max_lifetime: GoDuration
    ami_variant: AmiVariant
    ami_id: str | None = None
    # One id or an ordered, comma-separated list, tried in order.
    capacity_reservation_id: str | None = None
    placement: Placement | None = None  # the controller owns a group of this strategy
    placement_group_name: str | None = None  # or an existing group, never created or deleted
    efa: Efa | None = None
    max_spread: int | None = None  # bottom-layer network nodes a Ready gang may span
    # A Capacity Block is used only with at least this much time left before its drain point.
    min_runtime: GoDuration | None = None
    # Not part of the shape: the latest claimant's, like keep_warm_ttl and min_runtime.
    repair: Repair = "auto"

    @property
    def reservation_ids(self) -> tuple[str, ...]:
        """The Job's reservations, in the order they are tried."""
        raw = self.capacity_reservation_id or ""
        return tuple(dict.fromkeys(p.strip() for p in raw.split(",") if p.strip()))

    def shape(self) -> dict[str, object]:
        """The fields that define a pool's node set (see shape_equals)."""
        return self._base_shape() | {
            "placement": self.placement,
            "placementGroupName": self.placement_group_name,
            "efa": self.efa,
            "maxSpread": self.max_spread,
        }

    def _base_shape(self) -> dict[str, object]:
        return {
            "count": self.count,
            "instanceType": self.instance_type,
            "mode": self.mode,
            "region": self.region,
            "nodeRoleArn": self.node_role_arn,
            "amiVariant": self.ami_variant,
            "amiId": self.ami_id,
            "availabilityZones": list(self.availability_zones),
            "subnets": list(self.subnets),
            "maxLifetime": str(self.max_lifetime),
        }

    def shape_equals(self, other: GangSpec) -> bool:
        """Same count, type, mode, region, role, AMI, AZs/subnets, max lifetime and
        network (placement, EFA, max spread)."""
        return self.shape() == other.shape()

    def shape_diff(self, other: GangSpec) -> list[str]:
        """Names of the shape fields that differ, for a Rejected message."""
        a, b = self.shape(), other.shape()
        return [k for k in a if a[k] != b[k]]

    def shape_hash(self, length: int = 12) -> str:
        """A short stable digest of the shape (launch template names, tags)."""
        # Network fields only when set: a pool without them keeps its hash (its template).
        shape = {k: v for k, v in self.shape().items() if k not in NETWORK or v is not None}
        blob = json.dumps(shape, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:length]

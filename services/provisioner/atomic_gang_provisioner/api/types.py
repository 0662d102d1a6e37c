"""GangNodePool: the controller-owned record of one pool's node set.

``spec`` is written only by the Workload reconciler (the shape snapshot of the
first claimant plus at most one claim); ``status`` only by the pool reconciler.
Users never author these objects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

from atomic_gang import GangSpec, GoDuration

GROUP = "atomic-gang.k8s.aws"
VERSION = "v1alpha1"
KIND = "GangNodePool"
PLURAL = "gangnodepools"
FINALIZER = "atomic-gang.k8s.aws/release-instances"

Phase = Literal["Idle", "Acquiring", "Joining", "Satisfied", "KeepWarm", "Releasing", "Degraded"]


def _rfc3339(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Time = Annotated[datetime, PlainSerializer(_rfc3339, return_type=str)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PoolShape(_Model):
    """The fields of GangSpec.shape_equals: what a reusing claimant must match."""

    count: int = Field(ge=1, description="Gang size N.")
    instanceType: str
    mode: Literal["runinstances", "fleet"]
    region: str
    availabilityZones: list[str] = Field(default_factory=list)
    subnets: list[str] = Field(default_factory=list)
    nodeRoleArn: str
    maxLifetime: str = Field(description="Go duration.")
    amiVariant: Literal["standard", "nvidia", "neuron"]
    amiId: str | None = None
    capacityReservationId: str | None = None

    @classmethod
    def of(cls, spec: GangSpec) -> PoolShape:
        return cls(
            count=spec.count,
            instanceType=spec.instance_type,
            mode=spec.mode,
            region=spec.region,
            availabilityZones=list(spec.availability_zones),
            subnets=list(spec.subnets),
            nodeRoleArn=spec.node_role_arn,
            maxLifetime=str(spec.max_lifetime),
            amiVariant=spec.ami_variant,
            amiId=spec.ami_id,
            capacityReservationId=spec.capacity_reservation_id,
        )

    def gang_spec(self, *, pool: str, keep_warm_ttl: str) -> GangSpec:
        return GangSpec(
            pool=pool,
            count=self.count,
            instance_type=self.instanceType,
            mode=self.mode,
            region=self.region,
            availability_zones=tuple(self.availabilityZones),
            subnets=tuple(self.subnets),
            node_role_arn=self.nodeRoleArn,
            keep_warm_ttl=GoDuration.parse(keep_warm_ttl),
            max_lifetime=GoDuration.parse(self.maxLifetime),
            ami_variant=self.amiVariant,
            ami_id=self.amiId,
            capacity_reservation_id=self.capacityReservationId,
        )


class Claim(_Model):
    """The one Workload that owns the pool right now."""

    namespace: str
    name: str
    uid: str
    claimedAt: Time | None = Field(default=None, description="Tells re-claims apart.")

    @property
    def key(self) -> str:
        """Unique per claim, even when the same Workload claims again after a Retry."""
        when = self.claimedAt.strftime("%Y%m%dT%H%M%SZ") if self.claimedAt else "-"
        return f"{self.uid}@{when}"


class GangNodePoolSpec(_Model):
    shape: PoolShape
    keepWarmTTL: str = Field(default="10m", description="From the latest claimant.")
    claim: Claim | None = None


class Condition(_Model):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    lastTransitionTime: Time
    observedGeneration: int = 0


class GangNodePoolStatus(_Model):
    """Everything the pool reconciler needs to resume after a crash."""

    phase: Phase = "Idle"
    observedGeneration: int = 0
    claimKey: str = Field(default="", description="Claim key this status was computed for.")
    acquireGeneration: int = Field(default=1, ge=1, description="Generation of the next launch.")
    activeGeneration: int = Field(default=0, ge=0, description="Generation of the live set.")
    activeGroup: str = ""
    instanceIds: list[str] = Field(default_factory=list)
    fleetIds: list[str] = Field(default_factory=list)
    pendingEnis: list[str] = Field(default_factory=list)
    readyCount: int = 0
    acquiringSince: Time | None = None
    launchedAt: Time | None = None
    joinDeadline: Time | None = None
    satisfiedAt: Time | None = None
    keepWarmUntil: Time | None = None
    consecutiveShortfalls: int = 0
    nextAttemptAt: Time | None = None
    lastError: str = ""
    lastErrorReason: str = ""
    degradedClaimKey: str = Field(default="", description="Claim that must get Retry.")
    unhealthySince: Time | None = None
    conditions: list[Condition] = Field(default_factory=list)


class GangNodePool(_Model):
    apiVersion: Literal["atomic-gang.k8s.aws/v1alpha1"] = "atomic-gang.k8s.aws/v1alpha1"
    kind: Literal["GangNodePool"] = "GangNodePool"
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: GangNodePoolSpec
    status: GangNodePoolStatus = Field(default_factory=GangNodePoolStatus)

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def generation(self) -> int:
        return int(self.metadata.get("generation", 0))

    @property
    def resource_version(self) -> str:
        return str(self.metadata.get("resourceVersion", ""))

    @property
    def deleting(self) -> bool:
        return bool(self.metadata.get("deletionTimestamp"))

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> GangNodePool:
        return cls.model_validate(obj)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

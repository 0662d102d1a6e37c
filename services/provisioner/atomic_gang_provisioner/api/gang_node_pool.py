"""GangNodePool: the controller-owned record of one pool's node set.

``spec`` is written only by the Workload reconciler (the shape snapshot of the
first claimant plus at most one claim); ``status`` only by the pool reconciler.
Users never author these objects. Built in code, the models are strict (a typo
in a field name fails); read from the apiserver (:meth:`GangNodePool.from_dict`)
they keep fields a newer release wrote and write them back unchanged, because
during a rolling upgrade an older replica reads what a newer one wrote.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainSerializer,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from atomic_gang import GangSpec, GoDuration
from atomic_gang.resources import POOLS
from atomic_gang_provisioner.api.reasons import FailureReason, Reason
from atomic_gang_provisioner.timestamps import rfc3339

GROUP, VERSION, KIND, PLURAL = POOLS.group, POOLS.version, POOLS.kind, POOLS.plural
FINALIZER = "atomic-gang.k8s.aws/release-instances"

Phase = Literal[
    "Idle", "Acquiring", "Joining", "Satisfied", "Repairing", "KeepWarm", "Releasing", "Degraded"
]


Time = Annotated[datetime, PlainSerializer(rfc3339, return_type=str)]


_TOLERANT = "keep-unknown-fields"  # validation context flag, set by from_dict only


class _Model(BaseModel):
    """Strict when built in code; tolerant of unknown fields when read with from_dict."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # Fields of a newer release, as read: written back untouched (see the module doc).
    _unknown: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_unknown(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        if not isinstance(data, dict) or not (info.context or {}).get(_TOLERANT):
            return handler(data)
        known = {k: v for k, v in data.items() if k in cls.model_fields}
        model = handler(known)
        model._unknown = {k: v for k, v in data.items() if k not in cls.model_fields}
        return model

    # No return annotation on purpose: pydantic would take it as the serialized schema,
    # and the CRD is rendered from that schema (api/crd.py).
    @model_serializer(mode="wrap")
    def _write_unknown(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        out = handler(self)
        if self._unknown and isinstance(out, dict):
            return {**self._unknown, **out}
        return out

    def keeping_unknown_of(self, read: Self | None) -> Self:
        """This model, carrying what a newer release wrote into ``read`` (the copy it
        replaces), for a value rebuilt rather than updated with ``model_copy``."""
        if read is None or not read._unknown:
            return self
        out = self.model_copy()
        out._unknown = dict(read._unknown)
        return out


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
    placement: Literal["cluster"] | None = None
    placementGroupName: str | None = None
    efa: str | None = Field(default=None, description='"max" or a count per instance.')
    maxSpread: int | None = Field(default=None, ge=1)

    @property
    def summary(self) -> str:
        """``4×p4d.24xlarge (runinstances, us-east-1a)``: the shape as messages name it."""
        where = ",".join(self.availabilityZones or self.subnets) or "discovered zones"
        return f"{self.count}×{self.instanceType} ({self.mode}, {where})"

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
            placement=spec.placement,
            placementGroupName=spec.placement_group_name,
            efa=None if spec.efa is None else str(spec.efa),
            maxSpread=spec.max_spread,
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
            placement=self.placement,
            placement_group_name=self.placementGroupName,
            efa=None if self.efa is None else "max" if self.efa == "max" else int(self.efa),
            max_spread=self.maxSpread,
        )


class Claim(_Model):
    """The one Workload that owns the pool right now."""

    namespace: str
    name: str
    uid: str
    owner: str | None = Field(
        default=None,
        description=(
            "Kind/name of the object Kueue made the Workload for, in its namespace "
            "(Job/train-1, JobSet/allreduce)."
        ),
    )
    claimedAt: Time | None = Field(default=None, description="Tells re-claims apart.")
    resources: dict[str, int] = Field(
        default_factory=dict,
        description=(
            "Extended resources one pod of the claimant asks for (nvidia.com/gpu, "
            "vpc.amazonaws.com/efa, ...): a Node counts toward the gang once its allocatable "
            "holds them."
        ),
    )

    @property
    def key(self) -> str:
        """Unique per claim, even when the same Workload claims again after a Retry."""
        when = self.claimedAt.strftime("%Y%m%dT%H%M%SZ") if self.claimedAt else "-"
        return f"{self.uid}@{when}"


class GangNodePoolSpec(_Model):
    shape: PoolShape
    ownerNamespace: str | None = Field(
        default=None,
        description=(
            "The namespace the pool belongs to: its claimants come from there (or from the "
            "namespaces the admin's poolNamespaces lists for its name). Unset on pools "
            "created before ownership: the next claimant's namespace is recorded."
        ),
    )
    keepWarmTTL: str = Field(default="10m", description="From the latest claimant.")
    minRuntime: str | None = Field(
        default=None, description="From the latest claimant: Go duration it needs in a block."
    )
    repair: Literal["auto", "never"] | None = Field(
        default=None,
        description=(
            "From the latest claimant: never releases a broken gang whole instead of "
            "repairing it (unset: auto)."
        ),
    )
    claim: Claim | None = None


class Condition(_Model):
    """One fact the pool reports about its claim (see docs/design.md)."""

    type: str = Field(description="Ready, CapacityShortfall, Failed, Degraded or Released.")
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(description="CamelCase cause, e.g. InsufficientCapacity.")
    message: str = Field(default="", description="What it means for the claimant, in words.")
    lastTransitionTime: Time
    observedGeneration: int = Field(default=0, description="The pool generation it is for.")
    checkState: Literal["Retry", "Rejected"] | None = Field(
        default=None,
        description=(
            "Failed only: Retry or Rejected, what the claimant's AdmissionCheck becomes. Retry "
            "releases the quota and Kueue requeues the Workload later; Rejected: the Job cannot "
            "work as written."
        ),
    )


class PendingLaunch(_Model):
    """A launch whose outcome is unknown (EC2 may have made the set; its answer was
    lost): recorded before the next attempt, which sends this exact request first."""

    generation: int = Field(ge=1, description="The acquireGeneration it was sent at.")
    zone: str = Field(description="The availability zone (RunInstances idempotency is zonal).")
    clientToken: str = Field(description="The ClientToken it carried.")
    recordedAt: Time | None = Field(
        default=None,
        description=(
            "When its outcome was found unknown: a lookup by tag that finds nothing is "
            "trusted only some time after (EC2's tag lookups lag its launches)."
        ),
    )


class BrokenNode(_Model):
    """One node of a formed gang found broken, as a repair replaces it."""

    instanceId: str
    node: str = Field(default="", description="Its Node's name (empty: no Node).")
    reason: str = Field(description="InstanceLost, NodeNotReady or NodeUnhealthy.")
    detail: str = Field(
        default="", description="What broke it: AcceleratedHardwareReady=False (NvidiaXID79Error)."
    )
    since: Time | None = Field(default=None, description="When it turned bad.")


class RepairState(_Model):
    """A repair in progress: the broken nodes, terminated and replaced by one launch of
    as many while the rest of the gang is kept."""

    broken: list[BrokenNode]
    startedAt: Time
    launchedAt: Time | None = Field(default=None, description="The replacements' launch.")
    replacements: list[str] = Field(default_factory=list, description="Their instance ids.")
    attempts: int = Field(default=0, description="Launches that fell short so far.")


class GangNodePoolStatus(_Model):
    """Everything the pool reconciler needs to resume after a crash."""

    phase: Phase = "Idle"
    observedGeneration: int = 0
    claimKey: str = Field(
        default="", description="The claim (Claim.key) that status and conditions speak for."
    )
    acquireGeneration: int = Field(default=1, ge=1, description="Generation of the next launch.")
    activeGeneration: int = Field(default=0, ge=0, description="Generation of the live set.")
    activeGroup: str = Field(default="", description="Node group label of the live set.")
    instanceIds: list[str] = Field(default_factory=list)
    fleetIds: list[str] = Field(default_factory=list)
    pendingEnis: list[str] = Field(default_factory=list)
    readyCount: int = 0
    readyWithoutDevices: int = Field(
        default=0,
        description=(
            "Joining: Nodes Ready whose allocatable still lacks the devices one pod of the "
            "claimant asks for (spec.claim.resources)."
        ),
    )
    acquiringSince: Time | None = None
    launchedAt: Time | None = None
    joinDeadline: Time | None = None
    satisfiedAt: Time | None = None
    keepWarmUntil: Time | None = None
    consecutiveShortfalls: int = 0
    nextAttemptAt: Time | None = None
    lastError: str = ""
    lastErrorReason: Reason = FailureReason.NONE
    degradedClaimKey: str = Field(default="", description="Claim that must get Retry.")
    unhealthySince: Time | None = None
    reservationId: str = Field(default="", description="ODCR or Capacity Block of the live set.")
    reservationEnd: Time | None = Field(default=None, description="That reservation's EndDate.")
    capacityBlock: bool = Field(default=False, description="The live set runs in a block.")
    blockEndingWarned: bool = Field(default=False, description="CapacityBlockEnding was sent.")
    waitingSince: Time | None = Field(default=None, description="Waiting for a block to start.")
    placementGroup: str = Field(default="", description="The pool's own group, while it exists.")
    pendingLaunch: PendingLaunch | None = Field(
        default=None, description="A launch whose outcome is unknown: replayed first."
    )
    networkNodes: dict[str, list[str]] | None = Field(
        default=None, description="Instance id: its network nodes, top layer first (once read)."
    )
    spread: int = Field(default=0, description="Bottom-layer network nodes the gang spans.")
    zones: list[str] = Field(
        default_factory=list, description="Availability zones of the live set (repairs go there)."
    )
    repair: RepairState | None = Field(default=None, description="A repair in progress.")
    repairs: int = Field(default=0, description="Repairs made for the current claim.")
    conditions: list[Condition] = Field(
        default_factory=list,
        description=(
            "What the pool reports to its claimant; with claimKey and activeGroup all that the "
            "Workload reconciler reads of this status."
        ),
    )


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
        """Read a stored object: unknown fields (at any level) are kept, not rejected."""
        return cls.model_validate(obj, context={_TOLERANT: True})

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

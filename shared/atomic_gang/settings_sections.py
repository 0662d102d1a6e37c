"""The sections of the settings model, one class per chart value group."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from atomic_gang.durations import GoDuration


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Defaults(_Section):
    region: str = Field(default="", description="EKS cluster region; the only launch region.")
    nodeRoleArn: str = Field(default="", description="Default node IAM role ARN.")
    mode: Literal["runinstances", "fleet"] = Field(default="runinstances")
    keepWarmTTL: GoDuration = Field(default=GoDuration.of(minutes=10))
    maxLifetime: GoDuration = Field(default=GoDuration.of(hours=4))


class Limits(_Section):
    # CreateFleet's MinTargetCapacity tops out at 1000.
    maxGangSize: int = Field(default=64, ge=1, le=1000)
    maxKeepWarmTTL: GoDuration = Field(default=GoDuration.of(hours=24))
    maxLifetime: GoDuration = Field(
        default=GoDuration.of(hours=168), description="Cap on max-lifetime (and its default)."
    )


class LeaderElection(_Section):
    enabled: bool = True
    leaseName: str = "atomic-gang-provisioner"
    namespace: str = Field(default="", description="Lease namespace; empty = the pod's own.")
    leaseDurationSeconds: float = Field(default=15.0, gt=0)
    renewDeadlineSeconds: float = Field(default=10.0, gt=0)
    retryPeriodSeconds: float = Field(default=2.0, gt=0)

    @model_validator(mode="after")
    def _timings(self) -> LeaderElection:
        if not self.retryPeriodSeconds < self.renewDeadlineSeconds < self.leaseDurationSeconds:
            raise ValueError(
                "leaderElection needs retryPeriodSeconds < renewDeadlineSeconds"
                " < leaseDurationSeconds"
            )
        return self


class AcquireRetry(_Section):
    backoffBaseSeconds: float = Field(default=5.0, gt=0)
    backoffMaxSeconds: float = Field(default=300.0, gt=0)


class Ec2Api(_Section):
    """Our own EC2 API budget (EC2's defaults; an account with raised limits sets its
    own) and the batching windows of the calls many pools make at once."""

    runInstancesBurst: float = Field(default=5, ge=1, description="RunInstances bucket size.")
    runInstancesPerSecond: float = Field(default=2.0, gt=0)
    runInstancesInstanceBurst: float = Field(default=1000, ge=1, description="Instances bucket.")
    runInstancesInstancesPerSecond: float = Field(default=2.0, gt=0)
    mutatingBurst: float = Field(default=50, ge=1)
    mutatingPerSecond: float = Field(default=5.0, gt=0)
    nonMutatingBurst: float = Field(default=100, ge=1)
    nonMutatingPerSecond: float = Field(default=20.0, gt=0)
    batchIdleSeconds: float = Field(default=0.01, ge=0, description="Send once this quiet.")
    batchMaxSeconds: float = Field(default=0.1, ge=0, description="Send at the latest after.")
    shortCellSeconds: float = Field(
        default=180.0,
        ge=0,
        description="How long a capacity cell EC2 answered short stays known short; 0: off.",
    )
    shortCellOwedAfterSeconds: float = Field(
        default=135.0,
        ge=0,
        description=(
            "A gang this long in a short cell's line is owed the room freed next (nobody "
            "behind it launches first); 0: strict arrival order."
        ),
    )
    describeReuseSeconds: float = Field(
        default=10.0,
        ge=0,
        description=(
            "A join check takes a sign of life this recent: a DescribeInstances answer, or "
            "a Node turning Ready; 0: always asks EC2."
        ),
    )

    @model_validator(mode="after")
    def _windows(self) -> Ec2Api:
        if self.batchIdleSeconds > self.batchMaxSeconds:
            raise ValueError("ec2Api needs batchIdleSeconds <= batchMaxSeconds")
        return self


class CapacityBlock(_Section):
    """How gangs use Capacity Blocks (EC2 terminates a block's instances 30 min before its end)."""

    drainLeadSeconds: int = Field(
        default=2400,
        ge=1800,
        description=(
            "Drain point: this long before a block's EndDate the check goes to Retry "
            "(CapacityBlockEnding) and the pool releases the block's instances; at least "
            "1800, EC2's own termination lead."
        ),
    )
    minRemainingSeconds: int = Field(
        default=1800,
        ge=0,
        description="Without min-runtime, a gang starts in a block only with this much left "
        "before the drain point.",
    )
    warningLeadSeconds: int = Field(
        default=600,
        ge=0,
        description="The CapacityBlockEnding Event comes this long before the drain point.",
    )


class Iam(_Section):
    selfManageInstanceProfile: bool = False


class NamespaceAllowlist(_Section):
    """Allowlists for the Jobs of some namespaces: each list set here replaces the global
    list of the same name for them (several matching entries: the union of theirs); a
    list left unset keeps the global one."""

    namespaces: tuple[str, ...] = Field(
        min_length=1, max_length=256, description="Namespace names, or trailing-* globs."
    )
    allowedAmiIds: tuple[str, ...] | None = None
    allowedSubnets: tuple[str, ...] | None = None
    allowedCapacityReservationIds: tuple[str, ...] | None = None
    allowedNodeRoleArns: tuple[str, ...] | None = None
    allowedPlacementGroups: tuple[str, ...] | None = None

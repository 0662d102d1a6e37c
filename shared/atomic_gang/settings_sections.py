"""The sections of the settings model, one class per chart value group.

Fields are snake_case in code; the file, the chart and the environment name them in
camelCase (pydantic's ``to_camel``, or an explicit ``alias`` where
that would not give the chart's name, as for ``keepWarmTTL``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from atomic_gang.durations import GoDuration


class _Section(BaseModel):
    # Validated by the file's camelCase names only (the aliases), never by the snake_case
    # field names: a file, or an ATOMIC_GANG_<SECTION>__<FIELD> variable, accepts exactly
    # the names it always did. A dump is the file's form (serialize_by_alias) and errors
    # name the file's names (loc_by_alias).
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        loc_by_alias=True,
    )


class Defaults(_Section):
    region: str = Field(default="", description="EKS cluster region; the only launch region.")
    node_role_arn: str = Field(default="", description="Default node IAM role ARN.")
    mode: Literal["runinstances", "fleet"] = Field(default="runinstances")
    keep_warm_ttl: GoDuration = Field(default=GoDuration.of(minutes=10), alias="keepWarmTTL")
    max_lifetime: GoDuration = Field(default=GoDuration.of(hours=4))


class Limits(_Section):
    # CreateFleet's MinTargetCapacity tops out at 1000.
    max_gang_size: int = Field(default=64, ge=1, le=1000)
    max_keep_warm_ttl: GoDuration = Field(default=GoDuration.of(hours=24), alias="maxKeepWarmTTL")
    max_lifetime: GoDuration = Field(
        default=GoDuration.of(hours=168), description="Cap on max-lifetime (and its default)."
    )


class LeaderElection(_Section):
    enabled: bool = True
    lease_name: str = "atomic-gang-provisioner"
    namespace: str = Field(default="", description="Lease namespace; empty = the pod's own.")
    lease_duration_seconds: float = Field(default=15.0, gt=0)
    renew_deadline_seconds: float = Field(default=10.0, gt=0)
    retry_period_seconds: float = Field(default=2.0, gt=0)

    @model_validator(mode="after")
    def _timings(self) -> LeaderElection:
        if (
            not self.retry_period_seconds
            < self.renew_deadline_seconds
            < self.lease_duration_seconds
        ):
            raise ValueError(
                "leaderElection needs retryPeriodSeconds < renewDeadlineSeconds"
                " < leaseDurationSeconds"
            )
        return self


class AcquireRetry(_Section):
    backoff_base_seconds: float = Field(default=5.0, gt=0)
    backoff_max_seconds: float = Field(default=300.0, gt=0)


class Ec2Api(_Section):
    """Our own EC2 API budget (EC2's defaults; an account with raised limits sets its
    own) and the batching windows of the calls many pools make at once."""

    run_instances_burst: float = Field(default=5, ge=1, description="RunInstances bucket size.")
    run_instances_per_second: float = Field(default=2.0, gt=0)
    run_instances_instance_burst: float = Field(default=1000, ge=1, description="Instances bucket.")
    run_instances_instances_per_second: float = Field(default=2.0, gt=0)
    mutating_burst: float = Field(default=50, ge=1)
    mutating_per_second: float = Field(default=5.0, gt=0)
    non_mutating_burst: float = Field(default=100, ge=1)
    non_mutating_per_second: float = Field(default=20.0, gt=0)
    batch_idle_seconds: float = Field(default=0.01, ge=0, description="Send once this quiet.")
    batch_max_seconds: float = Field(default=0.1, ge=0, description="Send at the latest after.")
    short_cell_seconds: float = Field(
        default=180.0,
        ge=0,
        description="How long a capacity cell EC2 answered short stays known short; 0: off.",
    )
    short_cell_owed_after_seconds: float = Field(
        default=135.0,
        ge=0,
        description=(
            "A gang this long in a short cell's line is owed the room freed next (nobody "
            "behind it launches first); 0: strict arrival order."
        ),
    )
    describe_reuse_seconds: float = Field(
        default=10.0,
        ge=0,
        description=(
            "A join check takes a sign of life this recent: a DescribeInstances answer, or "
            "a Node turning Ready; 0: always asks EC2."
        ),
    )

    @model_validator(mode="after")
    def _windows(self) -> Ec2Api:
        if self.batch_idle_seconds > self.batch_max_seconds:
            raise ValueError("ec2Api needs batchIdleSeconds <= batchMaxSeconds")
        return self


class CapacityBlock(_Section):
    """How gangs use Capacity Blocks (EC2 terminates a block's instances 30 min before its end)."""

    drain_lead_seconds: int = Field(
        default=2400,
        ge=1800,
        description=(
            "Drain point: this long before a block's EndDate the check goes to Retry "
            "(CapacityBlockEnding) and the pool releases the block's instances; at least "
            "1800, EC2's own termination lead."
        ),
    )
    min_remaining_seconds: int = Field(
        default=1800,
        ge=0,
        description="Without min-runtime, a gang starts in a block only with this much left "
        "before the drain point.",
    )
    warning_lead_seconds: int = Field(
        default=600,
        ge=0,
        description="The CapacityBlockEnding Event comes this long before the drain point.",
    )


# A Node condition type: a Kubernetes qualified name (an optional DNS prefix and "/").
CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


class BadCondition(_Section):
    """A Node condition that breaks a gang node when it has ``status`` for ``graceSeconds``."""

    type: str = Field(min_length=1, max_length=316, pattern=CONDITION_TYPE)
    status: Literal["True", "False", "Unknown"] = "False"
    grace_seconds: int = Field(default=60, ge=0, le=86_400)


def _agent_conditions() -> tuple[BadCondition, ...]:
    """The EKS node monitoring agent's conditions (docs/operations.md, "Node health and repair"):
    the two that stop a gang's collectives at once after a minute, the rest after five."""
    quick = ("AcceleratedHardwareReady", "NetworkingReady")
    slow = ("KernelReady", "StorageReady", "ContainerRuntimeReady")
    return (
        *(BadCondition.model_validate({"type": t, "graceSeconds": 60}) for t in quick),
        *(BadCondition.model_validate({"type": t, "graceSeconds": 300}) for t in slow),
    )


class NodeHealth(_Section):
    """When a node of a formed gang is broken, beyond its instance and its Ready condition."""

    conditions: tuple[BadCondition, ...] = Field(
        default_factory=_agent_conditions,
        max_length=32,
        description="Node conditions that break a gang node: type, bad status, grace.",
    )

    @model_validator(mode="after")
    def _distinct(self) -> NodeHealth:
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.conditions):
            if c.type == "Ready":
                raise ValueError(
                    f"nodeHealth.conditions[{i}] type 'Ready': Ready is judged by "
                    "healthGraceSeconds, not listed here"
                )
            if (c.type, c.status) in seen:
                raise ValueError(f"nodeHealth.conditions[{i}] {c.type}={c.status} is listed twice")
            seen.add((c.type, c.status))
        return self


class Repair(_Section):
    """Repair in place: the broken nodes of a claimed gang replaced, the rest kept."""

    enabled: bool = Field(
        default=True,
        description="false: a broken gang is released whole (Retry), as Jobs with repair: never.",
    )
    deadline_seconds: int = Field(
        default=900,
        ge=1,
        le=86_400,
        description=(
            "repairDeadline: the replacements must be launched and Ready this long after "
            "the nodes broke, or the whole set is released and the claimant gets Retry."
        ),
    )
    max_nodes: int = Field(
        default=4,
        ge=1,
        le=1000,
        description="repairMaxNodes: more broken at once releases the whole set instead.",
    )
    max_repairs: int = Field(
        default=5,
        ge=0,
        le=1000,
        description="maxRepairs: repairs one claim gets; the next break releases the set.",
    )


class Iam(_Section):
    self_manage_instance_profile: bool = False


class NamespaceAllowlist(_Section):
    """Allowlists for the Jobs of some namespaces: each list set here replaces the global
    list of the same name for them (several matching entries: the union of theirs); a
    list left unset keeps the global one."""

    namespaces: tuple[str, ...] = Field(
        min_length=1, max_length=256, description="Namespace names, or trailing-* globs."
    )
    allowed_ami_ids: tuple[str, ...] | None = None
    allowed_subnets: tuple[str, ...] | None = None
    allowed_capacity_reservation_ids: tuple[str, ...] | None = None
    allowed_node_role_arns: tuple[str, ...] | None = None
    allowed_placement_groups: tuple[str, ...] | None = None

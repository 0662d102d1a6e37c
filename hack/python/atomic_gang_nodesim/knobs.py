"""The simulator's knobs: boot delay, device plugin delay, dropped joins, NotReady nodes,
and the node monitoring agent's conditions.

Pure and serialisable (the control API takes and shows these models). A drop
rule matches an instance by id, by pool, or as the n-th managed instance the
simulator discovers (1-based), and fires ``count`` times.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BootDelay(_Model):
    """EC2 boot plus nodeadm: ``seconds`` plus up to ``jitter`` more, per instance."""

    seconds: float = Field(default=2.0, ge=0, description="Time from first sight to the join.")
    jitter: float = Field(default=0.0, ge=0, description="Upper bound of the extra per instance.")

    def for_instance(self, instance_id: str) -> float:
        """Deterministic per instance, so a rerun of a scenario joins in the same order."""
        frac = int(hashlib.sha256(instance_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        return self.seconds + self.jitter * frac


class DevicePlugins(_Model):
    """The device plugins' pods (NVIDIA, Neuron, EFA) start on a registered Node and
    advertise their resources ``seconds`` after it registered; 0: at registration."""

    seconds: float = Field(default=0.0, ge=0, description="Registration to allocatable.")


class DropRule(_Model):
    """Joins that never happen (nodeadm fails; the watchdog must notice)."""

    instanceId: str | None = None
    pool: str | None = None
    nth: int | None = Field(default=None, ge=1, description="The n-th instance discovered.")
    count: int = Field(default=1, ge=1, description="How many joins this rule drops.")
    fired: int = 0

    @model_validator(mode="after")
    def _one_selector(self) -> DropRule:
        if sum(x is not None for x in (self.instanceId, self.pool, self.nth)) != 1:
            raise ValueError("give exactly one of instanceId, pool, nth")
        return self

    @property
    def exhausted(self) -> bool:
        return self.fired >= self.count

    def matches(self, *, instance_id: str, pool: str, ordinal: int) -> bool:
        if self.exhausted:
            return False
        if self.instanceId is not None:
            return self.instanceId == instance_id
        if self.pool is not None:
            return self.pool == pool
        return self.nth == ordinal


class AgentCondition(_Model):
    """A Node condition as the EKS node monitoring agent reports it (a failed GPU:
    ``AcceleratedHardwareReady=False`` with reason ``NvidiaXID79Error``), held on an
    instance's Node from ``since`` (RFC 3339) on."""

    instanceId: str
    type: str = Field(min_length=1)
    status: str = "False"
    reason: str = ""
    message: str = ""
    since: str = ""


class Knobs(_Model):
    boot: BootDelay = Field(default_factory=BootDelay)
    devices: DevicePlugins = Field(default_factory=DevicePlugins)
    drops: list[DropRule] = Field(default_factory=list)
    notReady: list[str] = Field(default_factory=list, description="Instance ids held NotReady.")
    conditions: list[AgentCondition] = Field(
        default_factory=list, description="Node conditions held as the node monitoring agent's."
    )

    def take_drop(self, *, instance_id: str, pool: str, ordinal: int) -> DropRule | None:
        """The first live rule for this instance, counted as fired."""
        for rule in self.drops:
            if rule.matches(instance_id=instance_id, pool=pool, ordinal=ordinal):
                rule.fired += 1
                return rule
        return None

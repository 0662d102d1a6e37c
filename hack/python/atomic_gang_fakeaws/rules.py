"""Fault rules: which call to break, how, and how many times.

``effect``: ``error`` fails the call before it runs; ``timeout`` loses the
request before it runs; ``lost_response`` runs the call, then loses the answer
(instances launched, caller sees a timeout or a dropped connection);
``malformed_fleet`` drops ``drop`` instance ids from a CreateFleet answer;
``fleet_error`` makes an instant CreateFleet launch nothing and answer 200 with
``code``/``message`` in its ``Errors[]`` (how EC2 reports, say, an
``UnauthorizedOperation`` on the launch template); ``stale_read`` (on
DescribeInstances) omits from a tag-filtered answer the instances launched less than
``seconds`` ago, EC2's eventual consistency (``consistency``).
``match`` compares flattened request parameters (``Placement.AvailabilityZone``
or ``SubnetId``) for equality; ``skip`` lets that many matching calls through.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Effect = Literal[
    "error", "timeout", "lost_response", "malformed_fleet", "fleet_error", "stale_read"
]


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str = Field(description="API action, e.g. RunInstances; '*' for any")
    service: str = "ec2"
    effect: Effect = "error"
    code: str = "InternalError"
    message: str = "We encountered an internal error. Please try again."
    status: int = Field(default=500, ge=400, le=599)
    times: int | None = Field(default=1, ge=1, description="None = forever")
    skip: int = Field(default=0, ge=0)
    drop: int = Field(default=1, ge=1)
    seconds: float = Field(default=30.0, ge=0, description="stale_read: how far reads lag")
    match: dict[str, str] = Field(default_factory=dict)
    fired: int = 0

    def matches(self, *, service: str, action: str, params: dict[str, str]) -> bool:
        if self.service not in ("*", service) or self.action not in ("*", action):
            return False
        return all(params.get(k) == v for k, v in self.match.items())

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.fired >= self.times

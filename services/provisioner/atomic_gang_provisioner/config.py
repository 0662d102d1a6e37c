"""Process settings of the provisioner (env ``ATOMIC_GANG_PROVISIONER_*``).

The controller knobs themselves live in the shared settings file
(``ATOMIC_GANG_CONFIG``; see ``atomic_gang.settings``).
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATOMIC_GANG_PROVISIONER_", extra="forbid")

    kubeconfig: str = Field(default="", description="Empty: $KUBECONFIG, else in-cluster.")
    namespace: str = Field(default="atomic-gang-system", description="Lease namespace fallback.")
    http_host: str = Field(default="0.0.0.0", description="/metrics /healthz /readyz")  # noqa: S104
    http_port: int = Field(default=8080, ge=0, le=65535)
    health_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="/healthz /readyz alone on a port of their own (the chart's probes), "
        "so clients holding the http port cannot fail them; the http port answers them "
        "too. Unset: no such port.",
    )
    metrics_auth: Literal["kubernetes", "none"] = Field(
        default="kubernetes",
        description="kubernetes: /metrics needs a bearer token allowed get on /metrics "
        "(TokenReview + SubjectAccessReview); none: anyone who reaches the port reads it.",
    )
    log_level: str = Field(default="info", pattern="^(debug|info|warning|error)$")
    pool_workers: int | None = Field(default=None, ge=1, description="Overrides the setting.")
    workload_workers: int = Field(default=8, ge=1, description="Workloads reconciled at once.")
    resync_seconds: float = Field(default=300.0, ge=0)
    eni_wait_seconds: float = Field(default=0.0, ge=0, description="0: never wait in a reconcile.")

    @model_validator(mode="after")
    def _probes_apart(self) -> Self:
        if self.health_port and self.health_port == self.http_port:
            raise ValueError(
                f"health_port {self.health_port} is http_port too: give the probes a port "
                "of their own, or leave health_port unset"
            )
        return self

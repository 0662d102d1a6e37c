"""Process settings of the webhook server (env ``ATOMIC_GANG_WEBHOOK_*``).

The gang rules themselves (defaults, limits, allowlists) come from the shared
settings file named by ``ATOMIC_GANG_CONFIG``; see ``atomic_gang.settings``.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MAX_BODY_BYTES = 3 * 1024 * 1024


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATOMIC_GANG_WEBHOOK_", extra="forbid")

    host: str = Field(default="0.0.0.0", description="Listen address.")  # noqa: S104
    port: int = Field(default=9443, ge=1, le=65535)
    cert_file: str = Field(default="/tls/tls.crt", description="PEM serving certificate.")
    key_file: str = Field(default="/tls/tls.key", description="PEM private key.")
    cert_check_interval: float = Field(default=1.0, gt=0, description="Seconds between checks.")
    log_level: str = Field(default="info", pattern="^(debug|info|warning|error)$")
    max_body_bytes: int = Field(default=MAX_BODY_BYTES, ge=1024)

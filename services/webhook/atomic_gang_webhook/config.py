"""Process settings of the webhook server (env ``ATOMIC_GANG_WEBHOOK_*``).

The gang rules themselves (defaults, limits, allowlists) come from the shared
settings file named by ``ATOMIC_GANG_CONFIG``; see ``atomic_gang.settings``.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from atomic_gang_webhook.guards import ConnectionLimits

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
    max_connections: int = Field(default=512, ge=1, description="Open connections, TLS or not.")
    handshake_timeout: float = Field(default=5.0, gt=0, description="Seconds for a TLS handshake.")
    header_timeout: float = Field(default=10.0, gt=0, description="Seconds for a request's head.")
    body_timeout: float = Field(default=10.0, gt=0, description="Seconds for a request's body.")
    # Longer than the API server's idle timeout for its webhook connections (Go's 90 s):
    # the client closes first, so it never reuses a connection we are closing.
    idle_timeout: float = Field(default=120.0, gt=0, description="Keep-alive idle seconds.")
    write_timeout: float = Field(default=10.0, gt=0, description="Seconds a reply may stall.")
    max_header_bytes: int = Field(default=64 * 1024, ge=4096)
    max_headers: int = Field(default=100, ge=16)
    max_pipelined: int = Field(default=8, ge=1, description="Requests queued per connection.")

    def limits(self) -> ConnectionLimits:
        return ConnectionLimits(
            max_connections=self.max_connections,
            handshake_timeout=self.handshake_timeout,
            header_timeout=self.header_timeout,
            body_timeout=self.body_timeout,
            write_timeout=self.write_timeout,
            max_header_bytes=self.max_header_bytes,
            max_headers=self.max_headers,
            max_pipelined=self.max_pipelined,
        )

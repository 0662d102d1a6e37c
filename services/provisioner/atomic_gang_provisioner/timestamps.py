"""RFC 3339 timestamps as the Kubernetes API and our EC2 tags carry them:
``2026-11-29T12:00:00Z`` (UTC, whole seconds). One writer, one reader."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> datetime:
    """``...Z`` or any offset; the result is timezone-aware."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))

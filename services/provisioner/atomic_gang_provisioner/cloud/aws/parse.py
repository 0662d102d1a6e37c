"""boto3 response dicts to our frozen types. Pure; nothing leaves as a dict."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from atomic_gang_provisioner.cloud.values import Instance, tag_tuple
from atomic_gang_provisioner.timestamps import parse_rfc3339


def tags_of(raw: Iterable[dict[str, Any]] | None) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value", "")) for t in raw or ()}


def when(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        return parse_rfc3339(value)
    return datetime.fromtimestamp(0, UTC)


def instance(raw: dict[str, Any]) -> Instance:
    return Instance(
        instance_id=str(raw["InstanceId"]),
        state=str(raw.get("State", {}).get("Name", "pending")),
        availability_zone=str(raw.get("Placement", {}).get("AvailabilityZone", "")),
        instance_type=str(raw.get("InstanceType", "")),
        launch_time=when(raw.get("LaunchTime")),
        tags=tag_tuple(tags_of(raw.get("Tags"))),
        client_token=str(raw.get("ClientToken") or ""),
        private_dns_name=str(raw.get("PrivateDnsName") or ""),
        capacity_reservation_id=str(raw.get("CapacityReservationId") or ""),
        lifecycle=str(raw.get("InstanceLifecycle") or ""),
    )


def instances_of_reservations(reservations: Iterable[dict[str, Any]]) -> list[Instance]:
    return [instance(i) for r in reservations for i in r.get("Instances", [])]


def tag_specs(resource_types: Iterable[str], tags: dict[str, str]) -> list[dict[str, Any]]:
    """TagSpecifications for each resource type, keys sorted (stable fingerprints)."""
    pairs = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
    return [{"ResourceType": rt, "Tags": pairs} for rt in resource_types]

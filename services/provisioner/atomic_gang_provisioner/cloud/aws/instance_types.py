"""What a launch needs to know about an instance type, from DescribeInstanceTypes:
its architecture (which AMI) and its EFA limits (how many interfaces, on which cards)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TypeInfo:
    arch: str
    efa_supported: bool = False
    max_efa_interfaces: int = 0
    network_cards: int = 1

    @classmethod
    def of(cls, raw: dict[str, Any]) -> TypeInfo:
        archs = (raw.get("ProcessorInfo") or {}).get("SupportedArchitectures") or []
        net = raw.get("NetworkInfo") or {}
        return cls(
            arch="arm64" if "arm64" in archs and "x86_64" not in archs else "x86_64",
            efa_supported=bool(net.get("EfaSupported")),
            max_efa_interfaces=int((net.get("EfaInfo") or {}).get("MaximumEfaInterfaces") or 0),
            network_cards=int(net.get("MaximumNetworkCards") or 1),
        )


def describe_type(ec2: Any, call: Callable[..., dict[str, Any]], instance_type: str) -> TypeInfo:
    found = call(ec2, "describe_instance_types", InstanceTypes=[instance_type])["InstanceTypes"]
    return TypeInfo.of(found[0] if found else {})

"""Syntax of the values the annotations carry: AWS ids, ARNs, names, globs."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Final

RFC1123_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
INSTANCE_TYPE: Final = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
INSTANCE_TYPE_GLOB: Final = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9-]*)?\*?$")
REGION: Final = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$")
SUBNET_ID: Final = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
AMI_ID: Final = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$")
CAPACITY_RESERVATION_ID: Final = re.compile(r"^cr-([0-9a-f]{8}|[0-9a-f]{17})$")
ROLE_ARN: Final = re.compile(
    r"^arn:aws(-[a-z]+)*:iam::\d{12}:role/(?:[\w+=,.@-]+/)*(?P<name>[\w+=,.@-]{1,64})$"
)
COUNT: Final = re.compile(r"^[1-9][0-9]{0,8}$")
MAX_POOL_NAME: Final = 63


_ZONE_SUFFIX: Final = re.compile(r"[a-z]|-[a-z]+(-[a-z]+)*-\d+[a-z]")
_ZONE: Final = re.compile(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}([a-z]|-[a-z0-9-]+[a-z])")


def zone_in_region(zone: str, region: str) -> bool:
    """``us-east-1a`` (AZ) or ``us-east-1-bos-1a`` (Local Zone) within ``region``."""
    if not zone.startswith(region):
        return False
    return _ZONE_SUFFIX.fullmatch(zone, len(region)) is not None


def zone_syntax(zone: str) -> bool:
    return _ZONE.fullmatch(zone) is not None


def instance_type_allowed(instance_type: str, allowlist: tuple[str, ...] | list[str]) -> bool:
    """Exact match or a trailing-``*`` glob (``p5.*``); an empty list allows all."""
    if not allowlist:
        return True
    for pattern in allowlist:
        if pattern.endswith("*"):
            if fnmatchcase(instance_type, pattern.replace("[", "[[]")):
                return True
        elif instance_type == pattern:
            return True
    return False


def role_name(arn: str) -> str | None:
    m = ROLE_ARN.match(arn)
    return m.group("name") if m else None

"""Syntax of the values the annotations carry: AWS ids, ARNs, names, globs.

Every pattern is compiled with ``re.ASCII``: ``\\d`` and ``\\w`` would otherwise take
any Unicode digit or letter (``us-east-١``), and AWS takes ASCII only.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Final

_A: Final = re.ASCII
RFC1123_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", _A)
INSTANCE_TYPE: Final = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$", _A)
INSTANCE_TYPE_GLOB: Final = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9-]*)?\*?$", _A)
REGION: Final = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$", _A)
SUBNET_ID: Final = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$", _A)
AMI_ID: Final = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$", _A)
CAPACITY_RESERVATION_ID: Final = re.compile(r"^cr-([0-9a-f]{8}|[0-9a-f]{17})$", _A)
ROLE_ARN: Final = re.compile(
    r"^arn:aws(-[a-z]+)*:iam::\d{12}:role/(?:[\w+=,.@-]+/)*(?P<name>[\w+=,.@-]{1,64})$", _A
)
# EKS's own rule for a cluster name (CreateCluster): 1-100 characters.
EKS_CLUSTER_NAME: Final = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$", _A)
EKS_CLUSTER_RULE: Final = (
    "EKS allows 1-100 characters: a letter or digit, then letters, digits, '-' and '_'"
)
COUNT: Final = re.compile(r"^[1-9][0-9]{0,8}$", _A)
MAX_POOL_NAME: Final = 63
# A namespace name, or a trailing-* glob of them (namespaceAllowlists).
NAMESPACE_GLOB: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$|^[a-z0-9][-a-z0-9]*\*$", _A)
# An EC2 placement group name (printable ASCII, 1-255), or a trailing-* glob of them.
PLACEMENT_GROUP_GLOB: Final = re.compile(r"^[\x21-\x7e]{1,255}$", _A)
# A pool name, or a pattern of pool names with "*" (the admin's poolNamespaces entries).
POOL_NAME_GLOB: Final = re.compile(r"^[a-z0-9*][-a-z0-9*]*$", _A)
# Allowlist entries of AWS ids: an exact id, or a prefix of one followed by "*".
ID_GLOBS: Final = {
    "ami": (AMI_ID, re.compile(r"^(a(m(i(-[0-9a-f]{0,16})?)?)?)?\*$", _A)),
    "subnet": (SUBNET_ID, re.compile(r"^(s(u(b(n(e(t(-[0-9a-f]{0,16})?)?)?)?)?)?)?\*$", _A)),
    "cr": (CAPACITY_RESERVATION_ID, re.compile(r"^(c(r(-[0-9a-f]{0,16})?)?)?\*$", _A)),
}


_ZONE_SUFFIX: Final = re.compile(r"[a-z]|-[a-z]+(-[a-z]+)*-\d+[a-z]", _A)
_ZONE: Final = re.compile(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}([a-z]|-[a-z0-9-]+[a-z])", _A)


def zone_in_region(zone: str, region: str) -> bool:
    """``us-east-1a`` (AZ) or ``us-east-1-bos-1a`` (Local Zone) within ``region``."""
    if not zone.startswith(region):
        return False
    return _ZONE_SUFFIX.fullmatch(zone, len(region)) is not None


def zone_syntax(zone: str) -> bool:
    return _ZONE.fullmatch(zone) is not None


def allowed(value: str, allowlist: tuple[str, ...] | list[str]) -> bool:
    """Exact match or a trailing-``*`` glob (``p5.*``, ``ami-0abc*``); empty allows all."""
    if not allowlist:
        return True
    for pattern in allowlist:
        if pattern.endswith("*"):
            if fnmatchcase(value, pattern.replace("[", "[[]")):
                return True
        elif value == pattern:
            return True
    return False


def id_glob_ok(kind: str, pattern: str) -> bool:
    """An allowlist entry of ``kind`` (ami, subnet, cr): an exact id or ``<prefix>*``."""
    exact, glob = ID_GLOBS[kind]
    return exact.fullmatch(pattern) is not None or glob.fullmatch(pattern) is not None


def role_name(arn: str) -> str | None:
    m = ROLE_ARN.match(arn)
    return m.group("name") if m else None

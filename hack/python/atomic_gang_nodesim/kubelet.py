"""The kubelet flags a simulated node registers with: ``--node-labels`` and
``--register-with-taints``.

Pure. Validation follows kubelet's own: label keys and values must be
Kubernetes qualified names and label values, taint effects one of the three,
and labels under ``kubernetes.io``/``k8s.io`` only the ones kubelet may set
itself (kubelet refuses to start otherwise). Other flags are accepted as is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_NAME_RE = re.compile(rf"^{_NAME}$")
_PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KUBELET_LABELS: Final = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
    }
)
_KUBELET_PREFIXES: Final = ("kubelet.kubernetes.io", "node.kubernetes.io")


class FlagError(ValueError):
    """A flag value kubelet would refuse."""


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def to_dict(self) -> dict[str, Any]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


def check_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if not _NAME_RE.match(name) or len(name) > 63:
        raise FlagError(f"invalid label/taint key {key!r}")
    if prefix and (len(prefix) > 253 or not _PREFIX_RE.match(prefix)):
        raise FlagError(f"invalid prefix in key {key!r}")


def check_value(value: str, what: str) -> None:
    if value and (len(value) > 63 or not _NAME_RE.match(value)):
        raise FlagError(f"invalid {what} value {value!r}")


def _restricted(key: str) -> bool:
    """A key in the kubernetes.io / k8s.io namespaces that kubelet may not self-assign."""
    prefix = key.rpartition("/")[0]
    in_ns = any(prefix == ns or prefix.endswith("." + ns) for ns in ("kubernetes.io", "k8s.io"))
    if not in_ns or key in _KUBELET_LABELS:
        return False
    return not any(prefix == p or prefix.endswith("." + p) for p in _KUBELET_PREFIXES)


def parse_labels(value: str) -> dict[str, str]:
    """``k1=v1,k2=v2`` (kubelet's mapStringString)."""
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in value.split(","))):
        key, sep, val = item.partition("=")
        if not sep:
            raise FlagError(f"--node-labels item {item!r} is not key=value")
        check_key(key)
        check_value(val, "label")
        if _restricted(key):
            raise FlagError(f"kubelet may not set label {key!r} on itself")
        out[key] = val
    return out


def parse_taints(value: str) -> tuple[Taint, ...]:
    """``key=value:Effect`` or ``key:Effect``, comma separated."""
    out = []
    for item in filter(None, (p.strip() for p in value.split(","))):
        kv, sep, effect = item.rpartition(":")
        if not sep or effect not in EFFECTS:
            raise FlagError(f"taint {item!r} needs an effect in {', '.join(EFFECTS)}")
        key, _, val = kv.partition("=")
        check_key(key)
        check_value(val, "taint")
        out.append(Taint(key, val, effect))
    return tuple(out)


def _pairs(flags: list[str]) -> list[tuple[str, str]]:
    """``--name=value`` and ``--name value`` forms, as kubelet's flag parser takes them."""
    out, i = [], 0
    while i < len(flags):
        flag = flags[i].strip()
        name, sep, value = flag.partition("=")
        if not sep and i + 1 < len(flags) and not flags[i + 1].startswith("-"):
            value, i = flags[i + 1], i + 1
        out.append((name, value))
        i += 1
    return out


def parse_flags(flags: list[str]) -> tuple[dict[str, str], tuple[Taint, ...]]:
    """Labels and taints from kubelet flags; repeated flags accumulate."""
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    for name, value in _pairs(flags):
        if not name.startswith("-"):
            raise FlagError(f"{name!r} is not a flag")
        if name == "--node-labels":
            labels.update(parse_labels(value))
        elif name == "--register-with-taints":
            taints.extend(parse_taints(value))
    return labels, tuple(taints)

"""The extended resources one pod asks for: GPUs, Neuron devices, EFA interfaces.

A device plugin advertises these in a Node's allocatable some time after the Node
turns Ready (its DaemonSet pod must start and register first); until then the
scheduler finds ``Insufficient nvidia.com/gpu`` and backs the pod off. So the
provisioner counts a Node toward the gang only once it holds what one pod asks for.

Pure. A pod's amount is Kubernetes' effective request: the sum over its containers
and sidecars, or the largest init container's if that is more (an init container run
after a sidecar is not added to it: a rare case, and it only asks less of the Node);
a container's request defaults to
its limit (for extended resources the two must be equal). Extended resources are
whole numbers (the apiserver refuses a Job otherwise), so quantities are integers,
with Kubernetes' decimal or binary suffixes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from atomic_gang.objects import field_list, field_map, items

NOT_EXTENDED: Final = ("kubernetes.io/", "requests.")
_QUANTITY = re.compile(r"^([0-9]+)(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_SCALE: Final[dict[str | None, int]] = {
    None: 1,
    **{s: 1000**i for i, s in enumerate(("k", "M", "G", "T", "P", "E"), start=1)},
    **{s: 1024**i for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), start=1)},
}


def is_extended(name: str) -> bool:
    """A domain-prefixed resource name outside Kubernetes' own (``nvidia.com/gpu``)."""
    return "/" in name and not name.startswith(NOT_EXTENDED)


def whole_quantity(value: object) -> int | None:
    """``"8"`` → 8, ``"1k"`` → 1000, ``"2Ki"`` → 2048; None for anything else."""
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        return None
    return int(match.group(1)) * _SCALE[match.group(2)]


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    res = field_map(container, "resources", "containers")
    wanted = {**field_map(res, "limits", "resources"), **field_map(res, "requests", "resources")}
    out = {}
    for name, qty in wanted.items():
        amount = whole_quantity(qty)
        if is_extended(name) and amount:
            out[name] = amount
    return out


def extended_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """The extended resources one pod of ``pod`` (a PodSpec) asks for, none at zero."""
    inits = items(field_list(pod, "initContainers", "spec"), "initContainers")
    sidecars = [c for c in inits if c.get("restartPolicy") == "Always"]  # run beside the app
    total: dict[str, int] = {}
    for c in [*items(field_list(pod, "containers", "spec"), "containers"), *sidecars]:
        for name, amount in _container_requests(c).items():
            total[name] = total.get(name, 0) + amount
    for c in inits:
        if c.get("restartPolicy") != "Always":
            for name, amount in _container_requests(c).items():
                total[name] = max(total.get(name, 0), amount)
    return dict(sorted(total.items()))

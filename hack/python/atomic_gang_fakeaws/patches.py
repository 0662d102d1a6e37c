"""Install every moto patch of the layer, once per process.

Each patch consults the active state and behaves exactly like moto when no
state is active, so installing is harmless for other tests in the process.
"""

from __future__ import annotations

import threading
from typing import Any

from atomic_gang_fakeaws import (
    consistency,
    dispatch,
    ec2_fidelity,
    ec2_launch,
    ec2_reservations,
    efa,
    eks_access,
    eks_ssm,
    iam_conditions,
    netlaunch,
    perf,
    placement,
    topology,
)

_lock = threading.Lock()
_done: list[bool] = []


def patch(owner: Any, name: str, fn: Any) -> None:
    setattr(owner, name, fn)


def install_patches() -> None:
    with _lock:
        if _done:
            return
        modules = [dispatch, ec2_launch, ec2_fidelity, ec2_reservations, eks_ssm, eks_access]
        modules += [iam_conditions, perf, placement, efa, netlaunch, topology, consistency]
        for module in modules:
            for owner, name, fn in module.PATCHES:
                patch(owner, name, fn)
        dispatch.BEFORE.update(ec2_fidelity.BEFORE)
        dispatch.EVERY.append(ec2_reservations.EVERY)
        ec2_reservations.install_filters()
        eks_access.install_urls()
        _done.append(True)

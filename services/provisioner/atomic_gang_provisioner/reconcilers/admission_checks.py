"""AdmissionCheck reconciler: advertise ``Active`` on the checks that are ours.

``Active=False`` with a reason when the check is misconfigured for us (we take
no parameters) or the cloud side cannot be reached, so Kueue marks the
ClusterQueue inactive instead of queueing into a black hole.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from atomic_gang.resources import ADMISSION_CHECKS
from atomic_gang_provisioner.reconcilers.context import Context
from atomic_gang_provisioner.runtime import Result
from atomic_gang_provisioner.timestamps import rfc3339
from atomic_gang_provisioner.views.admission_check import AdmissionCheck, is_ours


def desired(check: Mapping[str, Any], *, cloud_error: str) -> tuple[bool, str, str]:
    """(active, reason, message) for one of our checks (pure)."""
    if AdmissionCheck(check).parameters:
        return (
            False,
            "BadParametersRef",
            "atomic-gang-provisioner takes no parameters; remove spec.parameters",
        )
    if cloud_error:
        return False, "CloudUnavailable", f"cannot reach EC2/EKS: {cloud_error}"
    return True, "Active", "atomic-gang-provisioner is running and will provision gangs"


GEN = "observedGeneration"


class AdmissionCheckReconciler:
    def __init__(self, ctx: Context, *, cloud_error: Callable[[], str] = lambda: "") -> None:
        self.ctx = ctx
        self._cloud_error = cloud_error

    def _ours(self, name: str) -> Mapping[str, Any] | None:
        """The AdmissionCheck, if it names our controllerName (else None)."""
        check = self.ctx.checks.get(name)
        return (
            check
            if check is not None and is_ours(check, self.ctx.settings.controller_name)
            else None
        )

    def reconcile(self, name: str) -> Result:
        check = self._ours(name)
        if check is None:
            with contextlib.suppress(KeyError):  # gone, or not ours (any more)
                self.ctx.metrics.check_active.remove(name)
            return Result()
        active, reason, message = desired(check, cloud_error=self._cloud_error())
        self.ctx.metrics.check_active.labels(name).set(1 if active else 0)
        seen = AdmissionCheck(check)
        gen = seen.generation
        status = "True" if active else "False"
        old = seen.condition("Active")
        said = (status, reason, message, gen)
        if old and tuple(old.get(k) for k in ("status", "reason", "message", GEN)) == said:
            return Result()
        since = old.get("lastTransitionTime") if old and old.get("status") == status else None
        self.ctx.must_lead()
        self.ctx.client.apply_status(
            ADMISSION_CHECKS,
            {
                "apiVersion": ADMISSION_CHECKS.api_version,
                "kind": "AdmissionCheck",
                "metadata": {"name": name},
                "status": {
                    "conditions": [
                        {
                            "type": "Active",
                            "status": status,
                            "reason": reason,
                            "message": message,
                            "observedGeneration": gen,
                            "lastTransitionTime": since or rfc3339(self.ctx.now()),
                        }
                    ]
                },
            },
            field_manager=self.ctx.settings.controller_name,
        )
        return Result()

"""A Kueue AdmissionCheck: whose it is (spec.controllerName), its parameters, and the
conditions in its status (we write only ``Active``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from atomic_gang_provisioner.views.base import ObjectView


class AdmissionCheck(ObjectView):
    __slots__ = ()

    @property
    def controller_name(self) -> str | None:
        name: str | None = self.spec.get("controllerName")
        return name

    @property
    def parameters(self) -> Mapping[str, Any] | None:
        """spec.parameters: a reference to a parameters object (we take none)."""
        params: Mapping[str, Any] | None = self.spec.get("parameters")
        return params

    @property
    def conditions(self) -> Sequence[Mapping[str, Any]]:
        return self.status.get("conditions") or ()

    def condition(self, type_: str) -> Mapping[str, Any] | None:
        """The first condition of this type (None when there is none)."""
        return next((c for c in self.conditions if c.get("type") == type_), None)


def is_ours(check: Mapping[str, Any], controller_name: str) -> bool:
    """The one test of an AdmissionCheck being ours: its controllerName is ours."""
    return AdmissionCheck(check).controller_name == controller_name


def our_check_names(checks: Iterable[Mapping[str, Any]], controller_name: str) -> frozenset[str]:
    """Names of the AdmissionChecks whose controllerName is ``controller_name``."""
    return frozenset(AdmissionCheck(c).name for c in checks if is_ours(c, controller_name))

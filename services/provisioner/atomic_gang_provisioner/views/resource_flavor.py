"""A Kueue ResourceFlavor: the nodeLabels and tolerations Kueue gives every PodSet
admitted on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from atomic_gang_provisioner.views.base import ObjectView, section


class ResourceFlavor(ObjectView):
    __slots__ = ()

    @property
    def node_labels(self) -> Mapping[str, Any]:
        return section(self.spec, "nodeLabels")

    @property
    def tolerations(self) -> Sequence[Mapping[str, Any]]:
        return self.spec.get("tolerations") or []

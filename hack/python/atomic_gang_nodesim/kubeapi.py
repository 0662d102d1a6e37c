"""The apiserver calls the simulator makes (``KubeClient`` satisfies this)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from atomic_gang_provisioner.kube import KubeObject, Listing, Resource


class NodeApi(Protocol):
    def list(self, res: Resource) -> Listing: ...

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> KubeObject: ...

    def create(self, res: Resource, obj: KubeObject) -> KubeObject: ...

    def patch(
        self, res: Resource, name: str, patch: Mapping[str, Any], *, subresource: str = ""
    ) -> KubeObject: ...

    def replace_status(self, res: Resource, obj: KubeObject) -> KubeObject: ...

    def delete(self, res: Resource, name: str, *, uid: str | None = None) -> KubeObject | None: ...

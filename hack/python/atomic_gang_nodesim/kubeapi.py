"""The apiserver calls the simulator makes (``atomic_gang_kubelite.Kube`` satisfies this)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from atomic_gang_kubelite import Resource

Obj = dict[str, Any]


class NodeApi(Protocol):
    def list(self, res: Resource) -> list[Obj]: ...

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj: ...

    def create(self, res: Resource, obj: Obj) -> Obj: ...

    def patch(
        self, res: Resource, name: str, patch: Mapping[str, Any], *, subresource: str = ""
    ) -> Obj: ...

    def replace_status(self, res: Resource, obj: Obj) -> Obj: ...

    def delete(self, res: Resource, name: str, *, uid: str | None = None) -> None: ...

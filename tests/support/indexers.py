"""Index functions only tests use (the provisioner's own are in kube.store)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from atomic_gang_provisioner.kube.objects import KubeObject, meta


def by_field(*path: str) -> Callable[[KubeObject], Iterable[str]]:
    """Index by a nested string field, e.g. ``by_field("spec", "providerID")``."""

    def fn(obj: KubeObject) -> Iterable[str]:
        cur: Any = obj
        for part in path:
            if not isinstance(cur, dict):
                return ()
            cur = cur.get(part)
        return (cur,) if isinstance(cur, str) and cur else ()

    return fn


def by_namespace(obj: KubeObject) -> Iterable[str]:
    ns = meta(obj).get("namespace")
    return (ns,) if ns else ()

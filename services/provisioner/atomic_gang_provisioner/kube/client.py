"""``KubeClient``: typed get/list/watch/create/replace/patch/apply/delete over plain dicts.

Writes that must not lose a race carry ``metadata.resourceVersion`` and fail
with :class:`ConflictError`. Kueue's AdmissionCheckState is written with server-side
apply on ``/status`` (``apply_status``): the body holds only our own list entry,
so entries owned by other field managers are left alone. Our own CRD's status
uses a merge patch or a replace, both optimistic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Unpack

from atomic_gang.resources import Resource
from atomic_gang_provisioner.kube.api_errors import NotFoundError, error_from_status
from atomic_gang_provisioner.kube.objects import KubeObject, Listing, WatchEvent, meta
from atomic_gang_provisioner.kube.transport import (
    DEFAULT_TIMEOUT,
    LineStream,
    Request,
    Transport,
)

APPLY = "application/apply-patch+yaml"  # JSON is YAML: the body is sent as JSON
MERGE = "application/merge-patch+json"
Propagation = Literal["Foreground", "Background", "Orphan"]


class KubeClient:
    """The provisioner's only door to the apiserver."""

    def __init__(self, transport: Transport, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.transport = transport
        self.timeout = timeout

    @classmethod
    def from_kubeconfig(
        cls, path: str | Path | None = None, *, context: str | None = None
    ) -> KubeClient:
        return cls(Transport.from_kubeconfig(path, context=context))

    @classmethod
    def in_cluster(cls) -> KubeClient:
        return cls(Transport.in_cluster())

    def close(self) -> None:
        self.transport.close()

    def _call(
        self, method: str, path: str, *, timeout: float | None = None, **request: Unpack[Request]
    ) -> Any:
        """``Transport.request`` with this client's timeout unless the call names one."""
        wait = self.timeout if timeout is None else timeout
        return self.transport.request(method, path, timeout=wait, **request)

    def get(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        timeout: float | None = None,
    ) -> KubeObject:
        obj: KubeObject = self._call(
            "GET", res.path(namespace=namespace, name=name), timeout=timeout
        )
        return obj

    def served_versions(self, group: str) -> tuple[str, ...]:
        """The versions the apiserver serves of an API group (its discovery document);
        () when the group is not served at all."""
        try:
            found = self._call("GET", f"/apis/{group}")
        except NotFoundError:
            return ()
        return tuple(str(v.get("version", "")) for v in (found or {}).get("versions") or [])

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        keep: Callable[[KubeObject], KubeObject | None] | None = None,
    ) -> Listing:
        """Every item (following ``continue`` tokens) and the list's resourceVersion;
        with ``keep``, what it returns of each item (None: the item is left out), page
        by page, so a long list is never held whole: one page at a time is."""
        base = _selectors(label_selector, field_selector)
        items: list[KubeObject] = []
        token = ""
        while True:
            query = [*base, ("limit", str(page_size))] + ([("continue", token)] if token else [])
            page = self._call("GET", res.path(namespace=namespace), query=query)
            typed = _with_type(page)
            if keep is None:
                items.extend(typed)
            else:
                items.extend(kept for item in typed if (kept := keep(item)) is not None)
            token = (page.get("metadata") or {}).get("continue") or ""
            rv = str(page["metadata"].get("resourceVersion", ""))
            del page, typed  # before the next page is read
            if not token:
                return Listing(items=items, resource_version=rv)

    def watch(
        self,
        res: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        bookmarks: bool = True,
    ) -> WatchStream:
        """A watch from ``resource_version``; the server ends it after ``timeout_seconds``."""
        query: list[tuple[str, str]] = [
            *_selectors(label_selector, field_selector),
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        stream = self.transport.stream(
            res.path(namespace=namespace), query=query, read_timeout=timeout_seconds + 30.0
        )
        return WatchStream(stream)

    def create(
        self,
        res: Resource,
        obj: KubeObject,
        *,
        namespace: str | None = None,
        timeout: float | None = None,
    ) -> KubeObject:
        ns = namespace or meta(obj).get("namespace")
        path = res.path(namespace=ns)
        out: KubeObject = self._call("POST", path, body=_typed(res, obj), timeout=timeout)
        return out

    def replace(
        self,
        res: Resource,
        obj: KubeObject,
        *,
        subresource: str = "",
        timeout: float | None = None,
    ) -> KubeObject:
        """PUT; the object's ``metadata.resourceVersion`` makes it conditional (409 if stale)."""
        path = _object_path(res, obj, subresource)
        out: KubeObject = self._call("PUT", path, body=_typed(res, obj), timeout=timeout)
        return out

    def replace_status(self, res: Resource, obj: KubeObject) -> KubeObject:
        return self.replace(res, obj, subresource="status")

    def patch(
        self,
        res: Resource,
        name: str,
        patch: Mapping[str, Any],
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        subresource: str = "",
    ) -> KubeObject:
        """JSON merge patch; with ``resource_version`` it only applies to that version."""
        body = dict(patch)
        if resource_version is not None:
            body["metadata"] = {**(body.get("metadata") or {}), "resourceVersion": resource_version}
        path = res.path(namespace=namespace, name=name, subresource=subresource)
        out: KubeObject = self._call("PATCH", path, body=body, content_type=MERGE)
        return out

    def apply(
        self,
        res: Resource,
        obj: KubeObject,
        *,
        field_manager: str,
        force: bool = True,
        subresource: str = "",
    ) -> KubeObject:
        """Server-side apply of ``obj`` (which names itself in ``metadata``)."""
        query = [("fieldManager", field_manager), ("force", "true" if force else "false")]
        path = _object_path(res, obj, subresource)
        out: KubeObject = self._call(
            "PATCH", path, query=query, body=_typed(res, obj), content_type=APPLY
        )
        return out

    def apply_status(
        self, res: Resource, obj: KubeObject, *, field_manager: str, force: bool = True
    ) -> KubeObject:
        """Server-side apply on ``/status`` (how Kueue AdmissionCheckStates are written)."""
        return self.apply(res, obj, field_manager=field_manager, force=force, subresource="status")

    def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        uid: str | None = None,
        propagation: Propagation | None = None,
    ) -> KubeObject | None:
        """Delete, optionally only if the object still has this resourceVersion / uid."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        pre = {k: v for k, v in (("resourceVersion", resource_version), ("uid", uid)) if v}
        if pre:
            body["preconditions"] = pre
        if propagation:
            body["propagationPolicy"] = propagation
        out: KubeObject | None = self._call(
            "DELETE", res.path(namespace=namespace, name=name), body=body
        )
        return out


class WatchStream:
    """Watch events as dicts; an in-stream ``ERROR`` is raised as its typed error."""

    def __init__(self, lines: LineStream) -> None:
        self._lines = lines

    def __iter__(self) -> Iterator[WatchEvent]:
        for raw in self._lines:
            if raw.get("type") == "ERROR":
                status = raw.get("object") or {}
                raise error_from_status(int(status.get("code") or 500), status)
            yield raw

    def close(self) -> None:
        self._lines.close()

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._lines.__exit__(*exc)


def _with_type(page: KubeObject) -> list[KubeObject]:
    """List items as watch events carry them: with apiVersion and kind (lists omit them)."""
    kind = str(page.get("kind", "")).removesuffix("List")
    api_version = page.get("apiVersion", "")
    items: list[KubeObject] = page.get("items") or []
    for item in items:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return items


def _selectors(label: str | None, field: str | None) -> list[tuple[str, str]]:
    out = []
    if label:
        out.append(("labelSelector", label))
    if field:
        out.append(("fieldSelector", field))
    return out


def _object_path(res: Resource, obj: KubeObject, subresource: str) -> str:
    m = meta(obj)
    return res.path(namespace=m.get("namespace"), name=m["name"], subresource=subresource)


def _typed(res: Resource, obj: KubeObject) -> KubeObject:
    """``obj`` with apiVersion and kind filled in from ``res`` when missing."""
    if ("apiVersion" in obj and "kind" in obj) or not res.kind:
        return obj
    return {"apiVersion": res.api_version, "kind": res.kind, **obj}

"""``Kube``: get, list, create, merge-patch, replace status and delete, as dicts.

Requests go through the official client's ``ApiClient`` (kubeconfig, TLS, tokens);
answers are decoded JSON, never generated models. A non-2xx answer is raised as
its :mod:`~atomic_gang_kubelite.errors` kind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from atomic_gang.resources import Resource
from atomic_gang_kubelite.errors import error_from_status

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"
TIMEOUT = 30.0
PAGE = 500


class Kube:
    def __init__(self, api: Any) -> None:
        self.api = api

    @classmethod
    def from_kubeconfig(cls, path: str | Path | None = None) -> Kube:
        conf = k8s_client.Configuration()
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=None if path is None else str(path),
            client_configuration=conf,
            persist_config=False,
        )
        return cls(k8s_client.ApiClient(configuration=conf))

    def close(self) -> None:
        self.api.close()

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        found: Obj = self._call("GET", res.path(namespace=namespace, name=name))
        return found

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
    ) -> list[Obj]:
        """Every item, page by page; in all namespaces unless ``namespace`` names one."""
        query = [("labelSelector", label_selector)] if label_selector else []
        query += [("fieldSelector", field_selector)] if field_selector else []
        items: list[Obj] = []
        token = ""
        while True:
            more = [("continue", token)] if token else []
            page = self._call(
                "GET", res.path(namespace=namespace), [*query, ("limit", str(PAGE)), *more]
            )
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return items

    def create(self, res: Resource, obj: Obj) -> Obj:
        namespace = obj["metadata"].get("namespace")
        created: Obj = self._call("POST", res.path(namespace=namespace), body=obj)
        return created

    def patch(
        self, res: Resource, name: str, patch: Mapping[str, Any], *, subresource: str = ""
    ) -> Obj:
        """A JSON merge patch of a cluster-scoped object (or of its ``subresource``)."""
        path = res.path(name=name, subresource=subresource)
        patched: Obj = self._call("PATCH", path, body=dict(patch), content_type=MERGE)
        return patched

    def replace_status(self, res: Resource, obj: Obj) -> Obj:
        """PUT ``/status``; the object's ``metadata.resourceVersion`` makes it conditional."""
        meta = obj["metadata"]
        path = res.path(namespace=meta.get("namespace"), name=meta["name"], subresource="status")
        replaced: Obj = self._call("PUT", path, body=obj)
        return replaced

    def delete(self, res: Resource, name: str, *, uid: str | None = None) -> None:
        """Delete a cluster-scoped object; with ``uid``, only while it is that object."""
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        self._call("DELETE", res.path(name=name), body=body)

    def _call(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        *,
        body: Obj | None = None,
        content_type: str = "application/json",
    ) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        m, url, hdrs, data, _ = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        resp = self.api.call_api(m, url, header_params=hdrs, body=data, _request_timeout=TIMEOUT)
        try:
            raw = resp.read()
        finally:
            resp.response.release_conn()
        if not 200 <= resp.status < 300:
            raise error_from_status(resp.status, _status(raw))
        return json.loads(raw) if raw else None


def _status(raw: bytes) -> dict[str, Any]:
    """The apiserver's ``Status`` body; a plain-text answer (a proxy in between) is its message."""
    try:
        found = json.loads(raw)
    except ValueError:
        return {"message": raw.decode(errors="replace")[:200]}
    return found if isinstance(found, dict) else {}

"""The CLI's read-only view of a cluster (the kubernetes client, from a kubeconfig).

Only GET and LIST, through the client's typed and custom-object APIs: what a
read-only identity may do. A read that RBAC forbids is reported, not fatal: the
explanation says what it could not see. Returns plain JSON-shaped dicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from atomic_gang.resources import ADMISSION_CHECKS, CUSTOM_OWNERS, POOLS, WORKLOADS, Resource

Obj = dict[str, Any]
T = TypeVar("T")
# The gang objects read as custom objects, by kind.
CUSTOM = {res.kind: res for res in CUSTOM_OWNERS}


def _coordinates(res: Resource) -> tuple[str, str, str]:
    """(group, version, plural): how the custom-objects API names a collection."""
    return res.group, res.version, res.plural


class ClusterUnreachableError(Exception):
    """The kubeconfig cannot be loaded, or the API server does not answer."""


@dataclass
class Reader:
    """GETs and LISTs; ``denied`` collects what RBAC did not let us read."""

    api: client.ApiClient
    denied: list[str] = field(default_factory=list)

    @classmethod
    def from_kubeconfig(cls, path: str | None, *, context: str | None) -> Reader:
        try:
            api = config.new_client_from_config(config_file=path, context=context)  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError, ValueError) as exc:
            raise ClusterUnreachableError(f"cannot load kubeconfig: {exc}") from exc
        return cls(api)

    def _plain(self, typed: object) -> Obj:
        """A typed client object as the API's JSON (camelCase keys, RFC 3339 times)."""
        found: Obj = self.api.sanitize_for_serialization(typed)  # type: ignore[no-untyped-call]
        return found

    def _read(self, what: str, call: Callable[[], T], missing: T) -> T:
        try:
            return call()
        except ApiException as exc:
            if exc.status == 404:
                return missing
            if exc.status in (401, 403):
                self.denied.append(f"{what} ({exc.status} {exc.reason})")
                return missing
            raise ClusterUnreachableError(f"reading {what}: {exc.status} {exc.reason}") from exc
        except OSError as exc:  # urllib3's connection errors are OSErrors
            raise ClusterUnreachableError(f"reading {what}: {exc}") from exc

    def job(self, namespace: str, name: str) -> Obj | None:
        batch = client.BatchV1Api(self.api)

        def get() -> Obj | None:
            found = batch.read_namespaced_job(name, namespace)
            return self._plain(found)

        return self._read(f"job {namespace}/{name}", get, None)

    def custom(self, kind: str, namespace: str, name: str) -> Obj | None:
        """A JobSet or TrainJob (``kind``)."""
        res = CUSTOM[kind]
        group, version, plural = res.group, res.version, res.plural
        api = client.CustomObjectsApi(self.api)
        return self._read(
            f"{kind.lower()} {namespace}/{name}",
            lambda: cast(
                Obj, api.get_namespaced_custom_object(group, version, namespace, plural, name)
            ),
            None,
        )

    def workloads(self, namespace: str) -> list[Obj]:
        custom = client.CustomObjectsApi(self.api)

        def list_() -> list[Obj]:
            found = cast(
                Obj,
                custom.list_namespaced_custom_object(
                    WORKLOADS.group, WORKLOADS.version, namespace, WORKLOADS.plural
                ),
            )
            return list(found["items"])

        return self._read(f"workloads in {namespace}", list_, [])

    def admission_check(self, name: str) -> Obj | None:
        custom = client.CustomObjectsApi(self.api)
        return self._read(
            f"admissioncheck {name}",
            lambda: cast(
                Obj, custom.get_cluster_custom_object(*_coordinates(ADMISSION_CHECKS), name)
            ),
            None,
        )

    def pool(self, name: str) -> Obj | None:
        custom = client.CustomObjectsApi(self.api)
        return self._read(
            f"gangnodepool {name}",
            lambda: cast(Obj, custom.get_cluster_custom_object(*_coordinates(POOLS), name)),
            None,
        )

    def events(self, namespace: str, *, names: set[str]) -> list[Obj]:
        """Events about the objects called ``names`` in ``namespace``."""
        core = client.CoreV1Api(self.api)

        def list_() -> list[Obj]:
            items = core.list_namespaced_event(namespace).items
            found = [self._plain(e) for e in items]
            return [e for e in found if (e.get("involvedObject") or {}).get("name") in names]

        return self._read(f"events in {namespace}", list_, [])

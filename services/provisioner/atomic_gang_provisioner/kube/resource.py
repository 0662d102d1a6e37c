"""``Resource``: which API collection an object lives in, and the paths that reach it.

Objects cross this package's boundary as plain dicts; a ``Resource`` is the only
other thing a caller needs to name what to read or write.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    """An API collection, e.g. ``Resource("batch", "v1", "jobs", namespaced=True, kind="Job")``."""

    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        """The URL path of the collection, or of one object (and its subresource)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        elif self.namespaced and name is not None:
            raise ValueError(f"{self.plural} are namespaced: a namespace is needed for {name!r}")
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


CONFIGMAPS = Resource("", "v1", "configmaps", namespaced=True, kind="ConfigMap")
EVENTS = Resource("", "v1", "events", namespaced=True, kind="Event")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
PODS = Resource("", "v1", "pods", namespaced=True, kind="Pod")
SECRETS = Resource("", "v1", "secrets", namespaced=True, kind="Secret")
JOBS = Resource("batch", "v1", "jobs", namespaced=True, kind="Job")
LEASES = Resource("coordination.k8s.io", "v1", "leases", namespaced=True, kind="Lease")
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", False, "CustomResourceDefinition"
)
KUEUE = "kueue.x-k8s.io"
WORKLOADS = Resource(KUEUE, "v1beta2", "workloads", namespaced=True, kind="Workload")
ADMISSION_CHECKS = Resource(KUEUE, "v1beta2", "admissionchecks", False, "AdmissionCheck")
CLUSTER_QUEUES = Resource(KUEUE, "v1beta2", "clusterqueues", False, "ClusterQueue")
RESOURCE_FLAVORS = Resource(KUEUE, "v1beta2", "resourceflavors", False, "ResourceFlavor")

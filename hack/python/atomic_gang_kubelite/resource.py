"""``Resource``: the API collection an object lives in, and the paths that reach it."""

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

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        """The URL path of the collection (in a namespace, or across all), or of one object."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}" + (f"/{subresource}" if subresource else "")
        return base


# The collections the dev tools touch, named here rather than taken from the provisioner.
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
PODS = Resource("", "v1", "pods", namespaced=True, kind="Pod")
EVENTS = Resource("", "v1", "events", namespaced=True, kind="Event")
CONFIG_MAPS = Resource("", "v1", "configmaps", namespaced=True, kind="ConfigMap")
JOBS = Resource("batch", "v1", "jobs", namespaced=True, kind="Job")
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", namespaced=True, kind="JobSet")
TRAINJOBS = Resource(
    "trainer.kubeflow.org", "v1alpha1", "trainjobs", namespaced=True, kind="TrainJob"
)
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", namespaced=True, kind="Workload")
POOLS = Resource(
    "atomic-gang.k8s.aws", "v1alpha1", "gangnodepools", namespaced=False, kind="GangNodePool"
)

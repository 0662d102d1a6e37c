"""Every API collection this project's clients name, declared once.

The provisioner's kube adapter, the CLI's read-only view of a cluster and the dev tools'
own small client (``atomic_gang_kubelite``) all read their coordinates here: a
collection's group, version, plural and kind, and the URL paths that reach it. No
client library is imported: a ``Resource`` is plain data.
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
        """The URL path of the collection (in a namespace, or across all), or of one object
        (and its subresource)."""
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


KUEUE = "kueue.x-k8s.io"
JOBSET_GROUP = "jobset.x-k8s.io"
TRAINER_GROUP = "trainer.kubeflow.org"
RBAC_GROUP = "rbac.authorization.k8s.io"

# Ours.
POOLS = Resource(
    "atomic-gang.k8s.aws", "v1alpha1", "gangnodepools", namespaced=False, kind="GangNodePool"
)
# Kueue's.
WORKLOADS = Resource(KUEUE, "v1beta2", "workloads", namespaced=True, kind="Workload")
ADMISSION_CHECKS = Resource(
    KUEUE, WORKLOADS.version, "admissionchecks", namespaced=False, kind="AdmissionCheck"
)
RESOURCE_FLAVORS = Resource(
    KUEUE, WORKLOADS.version, "resourceflavors", namespaced=False, kind="ResourceFlavor"
)
CLUSTER_QUEUES = Resource(
    KUEUE, WORKLOADS.version, "clusterqueues", namespaced=False, kind="ClusterQueue"
)
LOCAL_QUEUES = Resource(KUEUE, WORKLOADS.version, "localqueues", namespaced=True, kind="LocalQueue")
KUEUE_API = WORKLOADS.api_version  # "kueue.x-k8s.io/v1beta2"
# The gang objects.
JOBS = Resource("batch", "v1", "jobs", namespaced=True, kind="Job")
JOBSETS = Resource(JOBSET_GROUP, "v1alpha2", "jobsets", namespaced=True, kind="JobSet")
TRAINJOBS = Resource(TRAINER_GROUP, "v1alpha1", "trainjobs", namespaced=True, kind="TrainJob")
# The gang owners beside Jobs: the provisioner watches each one the apiserver serves.
CUSTOM_OWNERS = (JOBSETS, TRAINJOBS)
# The core and the rest.
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
PODS = Resource("", "v1", "pods", namespaced=True, kind="Pod")
EVENTS = Resource("", "v1", "events", namespaced=True, kind="Event")
CONFIG_MAPS = Resource("", "v1", "configmaps", namespaced=True, kind="ConfigMap")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
SECRETS = Resource("", "v1", "secrets", namespaced=True, kind="Secret")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", namespaced=True, kind="ServiceAccount")
LEASES = Resource("coordination.k8s.io", "v1", "leases", namespaced=True, kind="Lease")
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    namespaced=False,
    kind="CustomResourceDefinition",
)
CLUSTER_ROLES = Resource(RBAC_GROUP, "v1", "clusterroles", namespaced=False, kind="ClusterRole")
CLUSTER_ROLE_BINDINGS = Resource(
    RBAC_GROUP, "v1", "clusterrolebindings", namespaced=False, kind="ClusterRoleBinding"
)
# Who holds a /metrics scraper's token, and may that user read /metrics.
TOKEN_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", namespaced=False, kind="TokenReview"
)
ACCESS_REVIEWS = Resource(
    "authorization.k8s.io",
    "v1",
    "subjectaccessreviews",
    namespaced=False,
    kind="SubjectAccessReview",
)

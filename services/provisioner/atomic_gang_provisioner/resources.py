"""The API collections the provisioner reads and writes: each named once, here.

The kube adapter names only the two it writes on its own (Events, Leases); tests and
the dev tools name the rest of what they touch in tests/support/resources.py.
"""

from __future__ import annotations

from atomic_gang_provisioner.api import GROUP, KIND, PLURAL, VERSION
from atomic_gang_provisioner.kube.resource import Resource

KUEUE = "kueue.x-k8s.io"

POOLS = Resource(GROUP, VERSION, PLURAL, namespaced=False, kind=KIND)
WORKLOADS = Resource(KUEUE, "v1beta2", "workloads", namespaced=True, kind="Workload")
ADMISSION_CHECKS = Resource(
    KUEUE, WORKLOADS.version, "admissionchecks", namespaced=False, kind="AdmissionCheck"
)
RESOURCE_FLAVORS = Resource(
    KUEUE, WORKLOADS.version, "resourceflavors", namespaced=False, kind="ResourceFlavor"
)
JOBS = Resource("batch", "v1", "jobs", namespaced=True, kind="Job")
JOBSET_GROUP = "jobset.x-k8s.io"
JOBSETS = Resource(JOBSET_GROUP, "v1alpha2", "jobsets", namespaced=True, kind="JobSet")
TRAINJOBS = Resource(
    "trainer.kubeflow.org", "v1alpha1", "trainjobs", namespaced=True, kind="TrainJob"
)
# The owners we serve beside Jobs, each watched when the apiserver serves it at start-up.
CUSTOM_OWNERS = (JOBSETS, TRAINJOBS)
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
# kube-system/aws-auth: read (only that one ConfigMap) to check a CONFIG_MAP cluster's mapRoles.
CONFIG_MAPS = Resource("", "v1", "configmaps", namespaced=True, kind="ConfigMap")

# Who holds a /metrics scraper's token, and may that user read /metrics (metrics_access).
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

KUEUE_API = WORKLOADS.api_version  # "kueue.x-k8s.io/v1beta2"

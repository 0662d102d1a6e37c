"""The API collections the provisioner reads and writes."""

from __future__ import annotations

from atomic_gang_provisioner.api import GROUP, KIND, PLURAL, VERSION
from atomic_gang_provisioner.kube.resource import Resource

KUEUE = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"

POOLS = Resource(GROUP, VERSION, PLURAL, namespaced=False, kind=KIND)
WORKLOADS = Resource(KUEUE, KUEUE_VERSION, "workloads", namespaced=True, kind="Workload")
ADMISSION_CHECKS = Resource(
    KUEUE, KUEUE_VERSION, "admissionchecks", namespaced=False, kind="AdmissionCheck"
)
RESOURCE_FLAVORS = Resource(
    KUEUE, KUEUE_VERSION, "resourceflavors", namespaced=False, kind="ResourceFlavor"
)
JOBS = Resource("batch", "v1", "jobs", namespaced=True, kind="Job")
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
# kube-system/aws-auth: read (only that one ConfigMap) to check a CONFIG_MAP cluster's mapRoles.
CONFIG_MAPS = Resource("", "v1", "configmaps", namespaced=True, kind="ConfigMap")

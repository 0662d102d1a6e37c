"""Every API collection the tests touch: the provisioner's own, and the ones only a
test (or a dev tool) reads or writes, which do not belong in production modules."""

from __future__ import annotations

from atomic_gang_provisioner.kube.resource import EVENTS, LEASES, Resource
from atomic_gang_provisioner.resources import (
    ADMISSION_CHECKS,
    CONFIG_MAPS,
    JOBS,
    JOBSETS,
    KUEUE,
    NODES,
    POOLS,
    RESOURCE_FLAVORS,
    TRAINJOBS,
    WORKLOADS,
)

NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
PODS = Resource("", "v1", "pods", namespaced=True, kind="Pod")
SECRETS = Resource("", "v1", "secrets", namespaced=True, kind="Secret")
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", False, "CustomResourceDefinition"
)
CLUSTER_QUEUES = Resource(KUEUE, WORKLOADS.version, "clusterqueues", False, "ClusterQueue")
LOCAL_QUEUES = Resource(KUEUE, WORKLOADS.version, "localqueues", True, "LocalQueue")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", namespaced=True, kind="ServiceAccount")
RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = Resource(RBAC, "v1", "clusterroles", namespaced=False, kind="ClusterRole")
CLUSTER_ROLE_BINDINGS = Resource(
    RBAC, "v1", "clusterrolebindings", namespaced=False, kind="ClusterRoleBinding"
)

__all__ = [
    "ADMISSION_CHECKS",
    "CLUSTER_QUEUES",
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIG_MAPS",
    "CRDS",
    "EVENTS",
    "JOBS",
    "JOBSETS",
    "LEASES",
    "LOCAL_QUEUES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "POOLS",
    "RESOURCE_FLAVORS",
    "SECRETS",
    "SERVICE_ACCOUNTS",
    "TRAINJOBS",
    "WORKLOADS",
    "Resource",
]

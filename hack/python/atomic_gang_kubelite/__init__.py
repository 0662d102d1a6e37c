"""A small Kubernetes client for the dev tools: plain dicts in and out.

The node simulator and the demo's observer check the provisioner from outside, so
they must not share its kube client: a bug in it would then show on both sides of a
test. This one rides on the official ``kubernetes`` client (its kubeconfig loading,
TLS and HTTP); only the paths, a merge patch and the error kinds are ours.
"""

from atomic_gang.resources import Resource
from atomic_gang_kubelite.client import Kube
from atomic_gang_kubelite.errors import AlreadyExistsError, ConflictError, KubeError, NotFoundError

__all__ = [
    "AlreadyExistsError",
    "ConflictError",
    "Kube",
    "KubeError",
    "NotFoundError",
    "Resource",
]

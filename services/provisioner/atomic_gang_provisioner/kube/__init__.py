"""The kube adapter: the only package that imports the official ``kubernetes`` client.

``KubeClient`` (typed errors, merge patch, server-side apply on ``/status``),
``Informer`` (list+watch caches with indexers), ``EventRecorder`` and
``LeaderElector``. Objects cross the boundary as plain dicts.
"""

from atomic_gang.resources import Resource
from atomic_gang_provisioner.kube.api_errors import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    KubeConfigError,
    KubeError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
    TransportError,
    UnauthorizedError,
)
from atomic_gang_provisioner.kube.client import KubeClient, WatchStream
from atomic_gang_provisioner.kube.informer import Handlers, Informer, InformerStats
from atomic_gang_provisioner.kube.leader import (
    LeaderElectionConfig,
    LeaderElector,
    default_identity,
)
from atomic_gang_provisioner.kube.objects import KubeObject, Listing, ObjectReference, object_key
from atomic_gang_provisioner.kube.recorder import EventRecorder, reference
from atomic_gang_provisioner.kube.store import IndexFunc, by_label, by_owner_uid

__all__ = [
    "AlreadyExistsError",
    "BadRequestError",
    "ConflictError",
    "EventRecorder",
    "ForbiddenError",
    "GoneError",
    "Handlers",
    "IndexFunc",
    "Informer",
    "InformerStats",
    "InvalidError",
    "KubeClient",
    "KubeConfigError",
    "KubeError",
    "KubeObject",
    "LeaderElectionConfig",
    "LeaderElector",
    "Listing",
    "NotFoundError",
    "ObjectReference",
    "Resource",
    "ServerError",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "WatchStream",
    "by_label",
    "by_owner_uid",
    "default_identity",
    "object_key",
    "reference",
]

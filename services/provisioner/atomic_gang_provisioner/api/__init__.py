"""The GangNodePool API (``atomic-gang.k8s.aws/v1alpha1``): pydantic models that are
the single source of the CRD manifest (see ``api.crd``)."""

from atomic_gang_provisioner.api.gang_node_pool import (
    FINALIZER,
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    BrokenNode,
    Claim,
    Condition,
    GangNodePool,
    GangNodePoolSpec,
    GangNodePoolStatus,
    PendingLaunch,
    Phase,
    PoolShape,
    RepairState,
)
from atomic_gang_provisioner.api.status_change import StatusChange

__all__ = [
    "FINALIZER",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "BrokenNode",
    "Claim",
    "Condition",
    "GangNodePool",
    "GangNodePoolSpec",
    "GangNodePoolStatus",
    "PendingLaunch",
    "Phase",
    "PoolShape",
    "RepairState",
    "StatusChange",
]

"""Our GangNodePool as the cache holds it, read without parsing it.

``api.GangNodePool.from_dict`` validates the whole object (pydantic): right for the
pool being reconciled, too dear for the passes over every cached pool (an informer's
handlers, the cost ledger, the other joining pools a read asks along). Those read
these few fields instead. The pool cache's indexes are defined here: by phase (the
joining ones ask along in each other's reads) and by claimant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from atomic_gang_provisioner.api.reasons import FailureReason, read_reason
from atomic_gang_provisioner.views.base import ObjectView, section


class PoolObject(ObjectView):
    __slots__ = ()

    @property
    def phase(self) -> str:
        """status.phase; "Idle" before the first status write (the phase it starts in)."""
        return str(self.status.get("phase") or "Idle")

    @property
    def waits_for_launch_budget(self) -> bool:
        """Acquiring, told to wait its turn for EC2's launch budget. Its reconcile set when
        to ask again; re-asking on the echo of that write would find a new count (a pool
        launches every half second), write it, and ask again on its echo, each time three
        writes (status, check, Event): a loop that made a slow box slower
        (docs/benchmarks.md#what-shaped-the-scale-figures)."""
        reason = read_reason(self.status.get("lastErrorReason"))
        return self.phase == "Acquiring" and reason is FailureReason.WAITING_FOR_LAUNCH_BUDGET

    @property
    def instance_ids(self) -> list[str]:
        return [str(i) for i in self.status.get("instanceIds") or ()]

    @property
    def topology_read(self) -> bool:
        """Whether status.networkNodes was written (EC2's topology of the gang was read)."""
        return self.status.get("networkNodes") is not None

    @property
    def claim(self) -> Mapping[str, Any] | None:
        """spec.claim: the Workload that holds the pool (None when free)."""
        claim: Mapping[str, Any] | None = self.spec.get("claim")
        return claim

    @property
    def shape(self) -> Mapping[str, Any]:
        return section(self.spec, "shape")

    @property
    def instance_type(self) -> str:
        return str(self.shape.get("instanceType", ""))

    @property
    def count(self) -> int:
        """shape.count: the gang's N (1 when unset)."""
        return int(self.shape.get("count", 1))

    @property
    def reservation_ids(self) -> tuple[str, ...]:
        """shape.capacityReservationId split at commas, blanks dropped."""
        ids = str(self.shape.get("capacityReservationId") or "")
        return tuple(i.strip() for i in ids.split(",") if i.strip())


PHASE_INDEX = "phase"
CLAIM_INDEX = "claim"


def phase_index(obj: Mapping[str, Any]) -> Iterable[str]:
    """A pool by status.phase."""
    return (PoolObject(obj).phase,)


def claim_index(obj: Mapping[str, Any]) -> Iterable[str]:
    """A pool by ``namespace/name`` of its claimant."""
    claim = PoolObject(obj).claim
    if not claim:
        return ()
    return (f"{claim.get('namespace')}/{claim.get('name')}",)


POOL_INDEXERS = {CLAIM_INDEX: claim_index, PHASE_INDEX: phase_index}

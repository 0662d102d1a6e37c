"""The reads a pool's reconcile makes of the cloud and of the other pools' cached
objects: the join check and the topology read (one outstanding read per pool, asked
along with the other joining pools' ids), and the reservations other pools want.

Other pools are read from the informer's raw objects, unparsed, through the phase
index: only the joining ones are looked at, never every pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.cloud.errors import CloudError
from atomic_gang_provisioner.cloud.topology import supported
from atomic_gang_provisioner.cloud.types import Instance, TopologyRead
from atomic_gang_provisioner.reconcilers.context import Context
from atomic_gang_provisioner.reconcilers.outstanding import Outstanding

PHASE_INDEX = "phase"


def phase_index(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """Index pools by status.phase (the joining ones ask along in each other's reads)."""
    return (str((obj.get("status") or {}).get("phase") or "Idle"),)


class PoolReads:
    def __init__(self, ctx: Context, *, requeue: Callable[[str], None] | None) -> None:
        self.ctx = ctx
        self._described: Outstanding[tuple[Instance, ...]] = Outstanding(requeue)
        self._topology: Outstanding[TopologyRead] = Outstanding(requeue)

    def describe(self, pool: GangNodePool, *, shared: bool) -> tuple[Instance, ...] | None:
        """The set's describe (None while it is out). The join check (``shared``) takes
        another pool's recent answer and asks along for the other joining pools."""
        also = self._joining_ids(pool.name) if shared else ()

        def start(ids: tuple[str, ...]) -> Future[tuple[Instance, ...]]:
            return self.ctx.cloud.describe_later(ids, also=also, reuse=shared)

        return self._described.answer(pool.name, tuple(pool.status.instanceIds), start)

    def topology(self, name: str, instance_ids: tuple[str, ...]) -> TopologyRead | None:
        """A failed read is a fact for decide (a gang without max-spread goes on)."""
        also = self._joining_ids(name, topology=True)
        try:
            return self._topology.answer(
                name, instance_ids, lambda ids: self.ctx.cloud.read_topology_later(ids, also=also)
            )
        except CloudError as err:
            return TopologyRead(error=f"{err.code}: {err.message}")

    def _joining_ids(self, name: str, *, topology: bool = False) -> tuple[str, ...]:
        """The other joining pools' instance ids, from the cached objects unparsed: asked
        along while a call has room, so their own check finds its answer ready. For
        topology, only the gangs of a type EC2 places that have not read theirs."""
        out: list[str] = []
        for obj in self.ctx.pools.by_index(PHASE_INDEX, "Joining"):
            status = obj.get("status") or {}
            if (obj.get("metadata") or {}).get("name") == name:
                continue
            shape = (obj.get("spec") or {}).get("shape") or {}
            if topology and (
                status.get("networkNodes") is not None
                or not supported(str(shape.get("instanceType", "")))
            ):
                continue
            out.extend(str(i) for i in status.get("instanceIds") or ())
        return tuple(out)

    def warm(self, name: str, instance_ids: tuple[str, ...]) -> None:
        """Read ahead: the answer only fills the reader's cache; nobody waits for it."""
        self.ctx.cloud.read_topology_later(
            instance_ids, also=self._joining_ids(name, topology=True)
        )

    def wanted(self, name: str) -> tuple[str, ...]:
        """Reservations other claimed pools still acquire for: described in the same
        DescribeCapacityReservations call as this pool's. Asked only by a pool that lists
        reservations itself (the others cost no pass over the pools), read from the cached
        objects without parsing them."""
        out: dict[str, None] = {}
        for obj in self.ctx.pools.list():
            spec, status = obj.get("spec") or {}, obj.get("status") or {}
            if (obj.get("metadata") or {}).get("name") == name or spec.get("claim") is None:
                continue
            if status.get("phase", "Idle") in ("Idle", "Acquiring"):
                ids = str((spec.get("shape") or {}).get("capacityReservationId") or "")
                out.update((i.strip(), None) for i in ids.split(",") if i.strip())
        return tuple(out)

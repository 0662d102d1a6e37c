"""The reads a pool's reconcile makes of the cloud and of the other pools' cached
objects: the join check and the topology read (one outstanding read per pool, asked
along with the other joining pools' ids), and the reservations other pools want.

Other pools are read from the informer's raw objects, unparsed, through the phase
index: only the joining ones are looked at, never every pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future

from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.network_layers import supported
from atomic_gang_provisioner.cloud.values import Instance, TopologyRead
from atomic_gang_provisioner.nodes import node_ready
from atomic_gang_provisioner.reconcilers.context import Context
from atomic_gang_provisioner.reconcilers.outstanding import Outstanding
from atomic_gang_provisioner.views.node import INSTANCE_INDEX
from atomic_gang_provisioner.views.pool_object import PHASE_INDEX, PoolObject

ALONG_MAX = 96  # a dozen gangs of 8: about those that finish within the reuse window


class PoolReads:
    def __init__(self, ctx: Context, *, requeue: Callable[[str], None] | None) -> None:
        self.ctx = ctx
        self._described: Outstanding[tuple[Instance, ...]] = Outstanding(requeue)
        self._topology: Outstanding[TopologyRead] = Outstanding(requeue)

    def describe(
        self, name: str, instance_ids: tuple[str, ...], *, shared: bool
    ) -> tuple[Instance, ...] | None:
        """The set's describe (None while it is out). The join check (``shared``) takes
        another pool's recent answer and asks along for the other joining pools."""

        def start(ids: tuple[str, ...]) -> Future[tuple[Instance, ...]]:
            also = self._join_along(name) if shared else ()  # only for a new read
            return self.ctx.observer.describe_later(ids, also=also, reuse=shared)

        return self._described.answer(name, instance_ids, start)

    def topology(self, name: str, instance_ids: tuple[str, ...]) -> TopologyRead | None:
        """A failed read is a fact for decide (a gang without max-spread goes on)."""

        def start(ids: tuple[str, ...]) -> Future[TopologyRead]:
            return self.ctx.observer.read_topology_later(ids, also=self._topology_along(name))

        try:
            return self._topology.answer(name, instance_ids, start)
        except CloudError as err:
            return TopologyRead(reason=err.reason, message=f"{err.code}: {err.message}")

    def _others_joining(self, name: str) -> Iterator[tuple[PoolObject, list[str]]]:
        """The other joining pools (cached objects, unparsed) with their instance ids."""
        for obj in self.ctx.pools.by_index(PHASE_INDEX, "Joining"):
            pool = PoolObject(obj)
            if pool.name != name:
                yield pool, pool.instance_ids

    def _join_along(self, name: str) -> tuple[str, ...]:
        """Ids to ask along in a join check: those of the gangs with the fewest Nodes left
        to turn Ready first (the next to need a check), up to ALONG_MAX: a describe costs
        EC2, and us the parsing, in proportion to the instances it lists. A gang with no
        Node Ready yet is left out: while a slow control plane held 800 not-ready taints
        for 40 s, such gangs were read again at every window (3.6 reads an instance), and
        a gang whose Nodes turn Ready together needs no describe (its Nodes vouch)."""
        gangs: list[tuple[int, list[str]]] = []  # (Nodes left to turn Ready, ids)
        for _, ids in self._others_joining(name):
            ready = sum(self._ready(i) for i in ids)
            if ready:
                gangs.append((len(ids) - ready, ids))
        gangs.sort(key=lambda gang: gang[0])
        return tuple(i for _, ids in gangs for i in ids)[:ALONG_MAX]

    def _topology_along(self, name: str) -> tuple[str, ...]:
        """Ids of the other joining gangs of a type EC2 places that have not read theirs."""
        out: list[str] = []
        for pool, ids in self._others_joining(name):
            if not pool.topology_read and supported(pool.instance_type):
                out.extend(ids)
        return tuple(out)

    def _ready(self, instance_id: str) -> bool:
        return any(node_ready(n) for n in self.ctx.nodes.by_index(INSTANCE_INDEX, instance_id))

    def warm(self, name: str, instance_ids: tuple[str, ...]) -> TopologyRead | None:
        """Read ahead: fills the reader's cache, nobody waits for it. The answer when it
        is there at once (cached), so the joining gang can label its Nodes ahead."""
        read = self.ctx.observer.read_topology_later(instance_ids, also=self._topology_along(name))
        return read.result() if read.done() and read.exception() is None else None

    def wanted(self, name: str) -> tuple[str, ...]:
        """Reservations other claimed pools still acquire for: described in the same
        DescribeCapacityReservations call as this pool's. Asked only by a pool that lists
        reservations itself (the others cost no pass over the pools), read from the cached
        objects without parsing them."""
        out: dict[str, None] = {}
        for obj in self.ctx.pools.list():
            pool = PoolObject(obj)
            if pool.name == name or pool.claim is None:
                continue
            if pool.phase in ("Idle", "Acquiring"):
                out.update((i, None) for i in pool.reservation_ids)
        return tuple(out)

"""The pool reconciler asks EC2 about every reservation still awaited in one call: the
acquire request of one pool carries the reservations of the other claimed pools that
are still acquiring (not its own, not an unclaimed or formed pool's)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.cloud.values import AwaitingReservation
from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.views.node import INSTANCE_INDEX, instance_index
from atomic_gang_provisioner.views.pool_object import POOL_INDEXERS
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import KEY, T0, pool


def named(name: str, reservations: str, *, claimed: bool = True, **status: Any) -> dict[str, Any]:
    p = (
        pool(claim=None)
        if not claimed
        else pool(**{"phase": "Acquiring", "claimKey": KEY, **status})
    )
    shape = p.spec.shape.model_copy(update={"capacityReservationId": reservations})
    spec = p.spec.model_copy(update={"shape": shape})
    renamed: GangNodePool = p.model_copy(
        update={"metadata": {**p.metadata, "name": name, "uid": f"{name}-uid"}, "spec": spec}
    )
    return renamed.to_dict()


def test_one_acquire_carries_the_reservations_every_other_acquiring_pool_awaits() -> None:
    pools = [
        named("pretrain", "cr-0000000a"),
        named("other", "cr-0000000b,cr-0000000c"),
        named("idle-unclaimed", "cr-0000000d", claimed=False),
        named("formed", "cr-0000000e", phase="Satisfied"),
    ]
    cloud = FakeCloud.unused()
    cloud.next("acquire", AwaitingReservation(message="Capacity Block cr-0000000a starts later"))
    ctx = context(
        settings=settings(),
        transport=RecordingTransport(),
        pools=FakeCache(pools, POOL_INDEXERS),
        workloads=FakeCache([]),
        now=lambda: T0 + timedelta(seconds=1),
    )
    nodes = FakeCache([], {INSTANCE_INDEX: instance_index})
    ctx = replace(ctx, nodes=nodes, launcher=cloud)
    PoolReconciler(ctx).reconcile("pretrain")
    (request,) = cloud.requests("acquire")
    assert request.spec.reservation_ids == ("cr-0000000a",)
    assert request.also_reservations == ("cr-0000000b", "cr-0000000c")

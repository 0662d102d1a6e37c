"""A release wakes the pools in line for the room it freed (they ask at once, not at
their 2 s poll)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from atomic_gang_provisioner.cloud.values import ReleaseResult
from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.views.node import INSTANCE_INDEX, instance_index
from atomic_gang_provisioner.views.pool_object import POOL_INDEXERS
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import T0, launched


def test_the_pools_in_line_for_the_freed_room_are_requeued() -> None:
    stored = launched(phase="Releasing", lastErrorReason="Released").to_dict()
    ctx = context(
        settings=settings(),
        transport=RecordingTransport(),
        pools=FakeCache([stored], POOL_INDEXERS),
        workloads=FakeCache([]),
        now=lambda: T0 + timedelta(seconds=60),
    )
    nodes = FakeCache([], {INSTANCE_INDEX: instance_index})
    frees_room = FakeCloud.unused()
    frees_room.next_hook(
        "release",
        lambda request: ReleaseResult(terminated=request.instance_ids, room_for=("eight", "two")),
    )
    ctx = replace(ctx, nodes=nodes, launcher=frees_room)
    woken: list[str] = []
    PoolReconciler(ctx, requeue=woken.append).reconcile("pretrain")
    assert woken == ["eight", "two"]

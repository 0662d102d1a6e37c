"""The reaper's placement-group sweep: a managed group whose pool is gone is deleted
(one still in use is tried again next sweep); a live pool's group is left alone."""

from __future__ import annotations

from dataclasses import replace

from atomic_gang_provisioner.cloud.values import PlacementGroup
from atomic_gang_provisioner.reconcilers.reaper import Reaper
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import T0, pool
from tests.unit.reaper.test_sweep import listing, orphan, reaped_groups

LIVE = PlacementGroup(name="atomic-gang-c-pretrain-1", strategy="cluster", pool="pretrain")
GONE = PlacementGroup(name="atomic-gang-c-gone-2", strategy="cluster", pool="gone")
UNTAGGED = PlacementGroup(name="atomic-gang-c-x-3", strategy="cluster", pool=None)


def reaper(cloud: FakeCloud) -> Reaper:
    ctx = replace(
        context(
            settings=settings(),
            transport=RecordingTransport(),
            pools=FakeCache([pool(claim=None).to_dict()]),
            now=lambda: T0,
        ),
        janitor=cloud,
    )
    return Reaper(ctx, interval=60)


def reaped_group_count(r: Reaper) -> float:
    value = r.ctx.metrics.registry.get_sample_value("atomic_gang_reaped_placement_groups_total")
    return value or 0.0


def test_groups_of_missing_pools_go_in_one_sweep() -> None:
    cloud = listing(groups=[LIVE, GONE, UNTAGGED])
    r = reaper(cloud)
    r.sweep()
    assert reaped_groups(cloud) == [GONE.name, UNTAGGED.name]
    assert [g.name for g in cloud.groups] == [LIVE.name]
    assert reaped_group_count(r) == 2


def test_a_group_still_in_use_is_tried_again_next_sweep() -> None:
    cloud = listing(orphan("i-1"), groups=[GONE], in_use={GONE.name})
    r = reaper(cloud)
    assert r.sweep() == {"orphaned": 1}  # its orphan is released in the same sweep
    assert reaped_groups(cloud) == []
    cloud.in_use.clear()  # EC2 stops counting the terminated instance
    r.sweep()
    assert reaped_groups(cloud) == [GONE.name]
    assert reaped_group_count(r) == 1

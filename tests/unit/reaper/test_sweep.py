"""The reaper's full release path: pending ENIs are retried on later sweeps (a
terminated instance is never listed again), and instances count as reaped only
once their release succeeded."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.values import (
    Instance,
    ReleaseResult,
)
from atomic_gang_provisioner.reconcilers.reaper import Reaper
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import T0, pool


def managed(
    iid: str,
    pool: str,
    *,
    generation: int | None = None,
    age: timedelta = timedelta(minutes=5),
) -> Instance:
    """A live managed instance of this cluster, tagged with ``pool`` (and a generation)."""
    tags = [(keys.CLUSTER, "my-eks-cluster"), (keys.MANAGED, "true"), (keys.POOL, pool)]
    if generation is not None:
        tags.append((keys.GENERATION, str(generation)))
    return Instance(
        instance_id=iid,
        state="running",
        availability_zone="us-east-1a",
        instance_type="p4d.24xlarge",
        launch_time=T0 - age,
        tags=tuple(tags),
    )


def orphan(iid: str) -> Instance:
    """A live managed instance of a pool that does not exist."""
    return managed(iid, "gone")


def listing(*listed: Instance, **fields: Any) -> FakeCloud:
    """The reaper's cloud role (``cloud.roles.Janitor``): EC2 lists these instances."""
    cloud = FakeCloud(**fields)
    cloud.add(*listed)
    return cloud


def reaped_groups(cloud: FakeCloud) -> list[str]:
    """The placement groups the reaper deleted (a group still in use is not)."""
    return [c["name"] for c in cloud.calls("reap_placement_group") if c.result]


def reaper(cloud: FakeCloud) -> Reaper:
    ctx = replace(
        context(settings=settings(), transport=RecordingTransport(), now=lambda: T0),
        janitor=cloud,
    )
    return Reaper(ctx, interval=60)


def reaped(r: Reaper, reason: str) -> float:
    value = r.ctx.metrics.registry.get_sample_value(
        "atomic_gang_reaped_instances_total", {"reason": reason}
    )
    return value or 0.0


def reapable(r: Reaper, reason: str) -> float | None:
    return r.ctx.metrics.registry.get_sample_value(
        "atomic_gang_reapable_instances", {"reason": reason}
    )


def test_pending_enis_are_retried_on_the_next_sweeps_until_deleted() -> None:
    cloud = listing(orphan("i-1"))
    cloud.next(
        "release",
        ReleaseResult(terminated=("i-1",), pending_enis=("eni-a", "eni-b")),
        ReleaseResult(deleted_enis=("eni-a",), pending_enis=("eni-b",)),
        ReleaseResult(deleted_enis=("eni-b",)),
    )
    r = reaper(cloud)
    assert r.sweep() == {"orphaned": 1}  # terminated: counted although ENIs are pending
    assert r.pending_enis == {"eni-a", "eni-b"}
    assert reapable(r, "orphaned") == 1
    assert r.sweep() == {}  # nothing listed any more, but the ENIs are not forgotten
    assert reapable(r, "orphaned") == 0
    assert r.sweep() == {}
    assert r.pending_enis == frozenset()
    r.sweep()  # nothing left: no release call at all
    assert [(q.instance_ids, q.enis) for q in cloud.requests("release")] == [
        (("i-1",), ()),
        ((), ("eni-a", "eni-b")),
        ((), ("eni-b",)),
    ]
    assert reaped(r, "orphaned") == 1


def test_a_failed_release_counts_and_logs_nothing_and_is_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failed = ReleaseResult(
        pending_enis=("eni-a",),
        reason=FailureReason.THROTTLED,
        message="RequestLimitExceeded: slow down",
    )
    cloud = listing(orphan("i-1"), orphan("i-2"))
    cloud.next("release", failed)
    r = reaper(cloud)
    with caplog.at_level("WARNING", logger="atomic_gang_provisioner.reaper"):
        assert r.sweep() == {}
    assert reaped(r, "orphaned") == 0
    assert reapable(r, "orphaned") == 2  # found, not yet gone: the gauge says so
    assert reapable(r, "max-lifetime") == 0
    assert not [x for x in caplog.records if x.getMessage() == "reaped instance"]
    assert any("release failed" in x.getMessage() for x in caplog.records)
    assert r.pending_enis == {"eni-a"}
    assert r.sweep() == {"orphaned": 2}  # still listed: the next sweep releases them
    assert cloud.requests("release")[1].instance_ids == ("i-1", "i-2")
    assert cloud.requests("release")[1].enis == ("eni-a",)
    assert reaped(r, "orphaned") == 2


def test_a_new_leader_recovers_the_enis_its_predecessor_left_pending() -> None:
    """The pending list lived in the old leader's memory; the new one finds the ENIs
    again from EC2 on its first sweep (once), and deletes them like its own."""
    cloud = listing()
    cloud.next("recover_enis", ("eni-left", "eni-cni"))
    cloud.next("release", ReleaseResult(deleted_enis=("eni-cni",), pending_enis=("eni-left",)))
    r = reaper(cloud)
    assert r.sweep() == {}
    assert r.pending_enis == {"eni-left"}
    r.sweep()
    assert len(cloud.calls("recover_enis")) == 1
    assert [q.enis for q in cloud.requests("release")] == [("eni-cni", "eni-left"), ("eni-left",)]


def test_a_failed_recovery_is_tried_again_on_the_next_sweep() -> None:
    cloud = listing()
    cloud.next("recover_enis", CloudError("RequestLimitExceeded", "slow down"), ("eni-x",))
    r = reaper(cloud)
    with pytest.raises(CloudError):
        r.sweep()
    assert r.sweep() == {}
    assert len(cloud.calls("recover_enis")) == 2
    assert [q.enis for q in cloud.requests("release")] == [("eni-x",)]


def test_a_pool_created_while_ec2_is_listed_is_not_taken_for_an_orphan() -> None:
    """The sweep lists EC2 before it reads the pools: the other way round, the pool was
    missing from the older snapshot and its brand-new instance was reaped as an orphan
    (bench.scale at 100 gangs: about 40 sets terminated and launched again)."""
    cache = FakeCache()

    def listing_while_a_pool_appears() -> tuple[Instance, ...]:
        """EC2's listing takes seconds at scale; a pool created meanwhile launches into it."""
        fresh = pool(phase="Acquiring", acquireGeneration=1)
        cache.upsert(fresh.name, fresh.to_dict())
        return (managed("i-new", fresh.name, generation=1, age=timedelta(seconds=1)),)

    cloud = listing()
    cloud.on("list_owned", listing_while_a_pool_appears)
    ctx = replace(
        context(settings=settings(), transport=RecordingTransport(), now=lambda: T0, pools=cache),
        janitor=cloud,
    )
    assert Reaper(ctx, interval=60).sweep() == {}
    assert cloud.requests("release") == []


def test_every_sweep_prunes_shared_templates_after_the_leaks() -> None:
    cloud = listing(orphan("i-1"))
    cloud.on("prune_templates", lambda: ("atomic-gang-c-shape-1",))
    r = reaper(cloud)
    assert r.sweep() == {"orphaned": 1}
    assert (len(cloud.calls("prune_templates")), len(cloud.requests("release"))) == (1, 1)
    assert r.sweep() == {}
    assert len(cloud.calls("prune_templates")) == 2

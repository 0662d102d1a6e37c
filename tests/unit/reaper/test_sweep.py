"""The reaper's full release path: pending ENIs are retried on later sweeps (a
terminated instance is never listed again), and instances count as reaped only
once their release succeeded."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.errors import CloudError
from atomic_gang_provisioner.cloud.types import (
    Instance,
    PlacementGroup,
    ReleaseRequest,
    ReleaseResult,
)
from atomic_gang_provisioner.reconcilers.reaper import Reaper
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


@dataclass
class FakeCloud:
    """The reaper's cloud role (``cloud.roles.Janitor``): a listing and scripted releases."""

    listed: list[Instance] = field(default_factory=list)
    results: list[ReleaseResult] = field(default_factory=list)
    requests: list[ReleaseRequest] = field(default_factory=list)
    recovered: list[tuple[str, ...] | Exception] = field(default_factory=list)
    recover_calls: int = 0
    groups: list[PlacementGroup] = field(default_factory=list)
    in_use: set[str] = field(default_factory=set)  # groups EC2 still counts instances in
    reaped_groups: list[str] = field(default_factory=list)
    prunes: int = 0
    pruned: tuple[str, ...] = ()

    def recover_enis(self) -> tuple[str, ...]:
        self.recover_calls += 1
        found = self.recovered.pop(0) if self.recovered else ()
        if isinstance(found, Exception):
            raise found
        return found

    def list_owned(self) -> tuple[Instance, ...]:
        return tuple(self.listed)

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        self.requests.append(request)
        result = self.results.pop(0) if self.results else ReleaseResult()
        if result.reason is None:  # terminated instances are never listed again
            gone = set(request.instance_ids)
            self.listed = [i for i in self.listed if i.instance_id not in gone]
        return result

    def prune_templates(self) -> tuple[str, ...]:
        self.prunes += 1
        return self.pruned

    def list_placement_groups(self) -> tuple[PlacementGroup, ...]:
        return tuple(self.groups)

    def reap_placement_group(self, name: str) -> bool:
        if name in self.in_use:
            return False
        self.reaped_groups.append(name)
        self.groups = [g for g in self.groups if g.name != name]
        return True


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
    cloud = FakeCloud(
        listed=[orphan("i-1")],
        results=[
            ReleaseResult(terminated=("i-1",), pending_enis=("eni-a", "eni-b")),
            ReleaseResult(deleted_enis=("eni-a",), pending_enis=("eni-b",)),
            ReleaseResult(deleted_enis=("eni-b",)),
        ],
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
    assert [(q.instance_ids, q.enis) for q in cloud.requests] == [
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
    cloud = FakeCloud(listed=[orphan("i-1"), orphan("i-2")], results=[failed])
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
    assert cloud.requests[1].instance_ids == ("i-1", "i-2")
    assert cloud.requests[1].enis == ("eni-a",)
    assert reaped(r, "orphaned") == 2


def test_a_new_leader_recovers_the_enis_its_predecessor_left_pending() -> None:
    """The pending list lived in the old leader's memory; the new one finds the ENIs
    again from EC2 on its first sweep (once), and deletes them like its own."""
    cloud = FakeCloud(
        recovered=[("eni-left", "eni-cni")],
        results=[ReleaseResult(deleted_enis=("eni-cni",), pending_enis=("eni-left",))],
    )
    r = reaper(cloud)
    assert r.sweep() == {}
    assert r.pending_enis == {"eni-left"}
    r.sweep()
    assert cloud.recover_calls == 1
    assert [q.enis for q in cloud.requests] == [("eni-cni", "eni-left"), ("eni-left",)]


def test_a_failed_recovery_is_tried_again_on_the_next_sweep() -> None:
    cloud = FakeCloud(recovered=[CloudError("RequestLimitExceeded", "slow down"), ("eni-x",)])
    r = reaper(cloud)
    with pytest.raises(CloudError):
        r.sweep()
    assert r.sweep() == {}
    assert cloud.recover_calls == 2
    assert [q.enis for q in cloud.requests] == [("eni-x",)]


@dataclass
class ListingWhilePoolsAppear(FakeCloud):
    """EC2's listing takes seconds at scale; a pool created meanwhile launches into it."""

    cache: FakeCache | None = None

    def list_owned(self) -> tuple[Instance, ...]:
        assert self.cache is not None
        fresh = pool(phase="Acquiring", acquireGeneration=1)
        self.cache.upsert(fresh.name, fresh.to_dict())
        return (managed("i-new", fresh.name, generation=1, age=timedelta(seconds=1)),)


def test_a_pool_created_while_ec2_is_listed_is_not_taken_for_an_orphan() -> None:
    """The sweep lists EC2 before it reads the pools: the other way round, the pool was
    missing from the older snapshot and its brand-new instance was reaped as an orphan
    (bench.scale at 100 gangs: about 40 sets terminated and launched again)."""
    cache = FakeCache()
    cloud = ListingWhilePoolsAppear(cache=cache)
    ctx = replace(
        context(settings=settings(), transport=RecordingTransport(), now=lambda: T0, pools=cache),
        janitor=cloud,
    )
    assert Reaper(ctx, interval=60).sweep() == {}
    assert cloud.requests == []


def test_every_sweep_prunes_shared_templates_after_the_leaks() -> None:
    cloud = FakeCloud(listed=[orphan("i-1")], pruned=("atomic-gang-c-shape-1",))
    r = reaper(cloud)
    assert r.sweep() == {"orphaned": 1}
    assert (cloud.prunes, len(cloud.requests)) == (1, 1)
    assert r.sweep() == {}
    assert cloud.prunes == 2

"""Issue 5 acceptance: the reaper sweeps orphans, instances past max lifetime and
sets whose keep-warm tag expired (even when the controller still thinks them warm)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from atomic_gang import keys
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import job, unique
from tests.e2e.provisioner.harness import Replicas, World
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
CLUSTER = "atomic-gang-dev"


@pytest.fixture(scope="module")
def replica(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    reps = world.replicas(
        tmp_path_factory.mktemp("prov-reaper"), unique("lease"), reapIntervalSeconds=2
    )
    reps.start("reaper")
    wait_for(
        lambda: world.lease_holder(reps.lease).startswith("reaper"),
        timeout=30,
        what="reaper leading",
    )
    yield reps
    reps.stop_all()


def _reaped(replica: Replicas, reason: str) -> float:
    for line in replica.metrics("reaper").splitlines():
        if line.startswith(f'atomic_gang_reaped_instances_total{{reason="{reason}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _sweeps(replica: Replicas) -> float:
    for line in replica.metrics("reaper").splitlines():
        if line.startswith("atomic_gang_reaper_sweeps_total "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _state(world: World, iid: str) -> str:
    res = world.ec2.describe_instances(InstanceIds=[iid])["Reservations"]
    return str(res[0]["Instances"][0]["State"]["Name"])


def test_orphan_is_reaped(world: World, replica: Replicas) -> None:
    tags = {keys.MANAGED: "true", keys.CLUSTER: CLUSTER, keys.POOL: unique("ghost")}
    out = world.ec2.run_instances(
        ImageId="ami-0123456789abcdef0",
        InstanceType="m5.large",
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ],
    )
    iid = out["Instances"][0]["InstanceId"]
    wait_for(
        lambda: _state(world, iid) in ("shutting-down", "terminated"),
        timeout=30,
        what="the orphan terminated",
    )
    # Counted once the whole release (terminate, then ENI clean-up) has succeeded, which
    # is a moment after the instance shows as terminated.
    wait_for(lambda: _reaped(replica, "orphaned") >= 1, timeout=30, what="the reap counted")


def test_unmanaged_instances_are_left_alone(world: World, replica: Replicas) -> None:
    out = world.ec2.run_instances(
        ImageId="ami-0123456789abcdef0", InstanceType="m5.large", MinCount=1, MaxCount=1
    )
    iid = out["Instances"][0]["InstanceId"]
    start = _sweeps(replica)
    wait_for(lambda: _sweeps(replica) >= start + 2, timeout=20, what="two sweeps")
    assert _state(world, iid) == "running"


def test_expired_keep_warm_tag_is_enforced(world: World, replica: Replicas, namespace: str) -> None:
    label = unique("kw")
    pool = gnp(namespace, label)
    submitted = world.submit(job("kw", namespace, pool=label, keep_warm_ttl="1h"))
    p = world.wait_pool(pool, lambda q: q.status.phase == "Joining", what="Joining")
    world.register_nodes(p)
    world.wait_check(submitted, "Ready")
    world.wait_pool(pool, lambda q: q.status.phase == "KeepWarm", what="KeepWarm")
    ids = world.live(pool)
    assert len(ids) == 4
    # After a controller restart only the tag remembers the window; pretend it ended.
    world.ec2.create_tags(
        Resources=ids, Tags=[{"Key": keys.KEEP_WARM_UNTIL, "Value": "2020-01-01T00:00:00Z"}]
    )
    wait_for(lambda: world.live(pool) == [], timeout=30, what="the warm set reaped")
    wait_for(lambda: _reaped(replica, "keep-warm-expired") >= 4, timeout=30, what="reaps counted")


def test_max_lifetime_is_enforced(world: World, replica: Replicas, namespace: str) -> None:
    label = unique("old")
    pool = gnp(namespace, label)
    submitted = world.submit(job("old", namespace, pool=label, max_lifetime="10s", runs_for="1h"))
    p = world.wait_pool(pool, lambda q: q.status.phase == "Joining", what="Joining")
    world.register_nodes(p)
    world.wait_check(submitted, "Ready")
    ids = set(p.status.instanceIds)
    wait_for(lambda: not ids & set(world.live(pool)), timeout=40, what="max lifetime reaping")
    wait_for(lambda: _reaped(replica, "max-lifetime") >= 4, timeout=30, what="reaps counted")

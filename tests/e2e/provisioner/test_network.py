"""Placement groups, EFA and topology on the real control plane + simulated EC2: the
gang in its own cluster group with EFA on every card, labelled and spread 1; a group
that cannot hold N; refusals before anything bills; a crash between the group and the
launch; max-spread releasing a spread gang whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from atomic_gang.resources import JOBS, NODES, POOLS
from atomic_gang_devstack.components.cloud import fakeaws_endpoint
from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.cloud import naming
from tests.e2e.kube import Kube
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import job, unique
from tests.e2e.provisioner.harness import Replicas, World, iter_pods, reaper_sweeps
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
CLUSTER = "atomic-gang-dev"
P4D = "p4d.24xlarge"


@pytest.fixture(scope="module")
def replica(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    reps = world.replicas(
        tmp_path_factory.mktemp("prov-network"), unique("lease"), reapIntervalSeconds=2
    )
    reps.start("net-a")
    wait_for(lambda: world.lease_holder(reps.lease).startswith("net-a"), timeout=30, what="lead")
    yield reps
    reps.stop_all()


def network_job(name: str, namespace: str, *, pool: str, **extra: str) -> dict[str, Any]:
    """A gang of 4 p4d in the pool's own cluster placement group, EFA on every card
    (``pool``: the Job's pool label)."""
    annotations = {"placement": "cluster", "efa": "true", "instance_type": P4D, **extra}
    return job(name, namespace, pool=pool, **annotations)  # type: ignore[arg-type]


def group_of(pool: str) -> str:
    return naming.placement_group_name(cluster=CLUSTER, pool=pool)


def group_exists(world: World, name: str) -> bool:
    try:
        found = world.ec2.describe_placement_groups(GroupNames=[name])["PlacementGroups"]
    except ClientError as err:
        if err.response["Error"]["Code"] != "InvalidPlacementGroup.Unknown":
            raise
        return False
    return bool(found)


def described(world: World, ids: list[str]) -> list[dict[str, Any]]:
    res = world.ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return [i for r in res for i in r["Instances"]]


def cluster_security_group(world: World) -> str:
    eks = boto3.client(
        "eks",
        region_name="us-east-1",
        endpoint_url=fakeaws_endpoint(world.ctx),
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    vpc = eks.describe_cluster(name=CLUSTER)["cluster"]["resourcesVpcConfig"]
    return str(vpc["clusterSecurityGroupId"])


def joining(world: World, pool: str, generation: int = 0) -> GangNodePool:
    return world.wait_pool(
        pool,
        lambda p: p.status.phase == "Joining" and p.status.activeGeneration > generation,
        what=f"{pool} Joining past generation {generation}",
    )


# First in the module: the controller caches a security group's "yes" for the process.
def test_security_group_without_self_rule_is_rejected_before_any_launch(
    world: World, replica: Replicas, namespace: str
) -> None:
    sg = cluster_security_group(world)
    world.fake.set_self_rule(sg, allowed=False, region="us-east-1")
    try:
        label = unique("nosg")
        pool = gnp(namespace, label)
        submitted = world.submit(network_job("nosg", namespace, pool=label))
        check = world.wait_check(submitted, "Rejected")
    finally:
        world.fake.set_self_rule(sg, allowed=True, region="us-east-1")
    assert (
        f"EFA needs security group {sg} to allow all traffic to and from itself"
        in (check["message"])
    )
    assert "inbound" in check["message"]
    assert world.launches(pool) == []
    assert world.live(pool) == []


def test_efa_on_a_type_without_efa_is_rejected_naming_type_and_limit(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("noefa")
    pool = gnp(namespace, label)
    submitted = world.submit(
        job("noefa", namespace, pool=label, efa="true", instance_type="m5.large")
    )
    check = world.wait_check(submitted, "Rejected")
    assert "instance type m5.large does not support EFA" in check["message"]
    assert "its limit is 0 EFA interfaces" in check["message"]
    assert world.launches(pool) == []


def test_gang_in_its_group_with_efa_labelled_spread_one(
    world: World, replica: Replicas, namespace: str, kube: Kube
) -> None:
    label = unique("pg")
    pool = gnp(namespace, label)
    submitted = world.submit(network_job("pg", namespace, pool=label, keep_warm_ttl="0s"))
    p = joining(world, pool)
    assert [c["outcome"] for c in world.launches(pool)] == ["ok"]  # one call for all four
    for inst in described(world, p.status.instanceIds):
        assert inst["Placement"]["GroupName"] == group_of(pool)
        efa = sorted(
            (n["Attachment"]["NetworkCardIndex"], n["Attachment"]["DeviceIndex"])
            for n in inst["NetworkInterfaces"]
            if n["InterfaceType"] == "efa"
        )
        assert efa == [(0, 0), (1, 1), (2, 1), (3, 1)]
    names = world.register_nodes(p)
    world.wait_check(submitted, "Ready")
    ready = world.pool(pool)
    assert ready is not None
    assert ready.status.spread == 1
    bottom = {n[-1] for n in (ready.status.networkNodes or {}).values()}
    assert len(bottom) == 1
    header, row = kube.run("get", "gnp", pool, "-o", "wide").stdout.splitlines()
    assert header.split()[-3:] == ["SPREAD", "RESERVATION", "ENDS"]
    assert row.split()[-1] == "1"  # no reservation: its two columns are empty
    assert f'atomic_gang_pool_spread{{pool="{pool}"}} 1.0' in replica.metrics("net-a")
    for name in names:
        labels = world.kube.get(NODES, name)["metadata"]["labels"]
        iid = name.removeprefix("node-")
        layers = (ready.status.networkNodes or {})[iid]
        for n, node in enumerate(layers, 1):
            assert labels[f"topology.k8s.aws/network-node-layer-{n}"] == node
    wait_for(
        lambda: (
            (world.kube.get(JOBS, "pg", namespace=namespace).get("status") or {}).get("succeeded")
            == 4
        ),
        timeout=60,
        what="the Job completes",
    )
    world.wait_pool(pool, lambda p: p.status.phase == "Idle" and not p.status.placementGroup)
    assert not group_exists(world, group_of(pool))
    world.delete_nodes(names)


def test_group_that_holds_three_of_four_waits_at_zero_then_admits(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("pg3")
    pool = gnp(namespace, label)
    world.fake.set_placement_capacity(P4D, 3, group=group_of(pool))
    try:
        submitted = world.submit(network_job("pg3", namespace, pool=label))
        world.wait_pool(pool, lambda p: p.status.consecutiveShortfalls >= 2, what="2 shortfalls")
        assert world.live(pool) == []
        check = world.check(submitted)
        assert check["state"] == "Pending"
        assert "nothing billed" in check["message"]
    finally:
        world.fake.set_placement_capacity(P4D, None, group=group_of(pool))
    names = world.register_nodes(joining(world, pool))
    world.wait_check(submitted, "Ready")
    world.delete_nodes(names)


def test_crash_between_group_and_launch_adopts_and_leaks_nothing(
    world: World, replica: Replicas, namespace: str
) -> None:
    label, gone_label = unique("crash"), unique("gone")
    pool, gone = gnp(namespace, label), gnp(namespace, gone_label)
    for name in (pool, gone):  # the group is made, the launch cannot fit: then the crash
        world.fake.set_placement_capacity(P4D, 0, group=group_of(name))
    first = world.submit(network_job("crash", namespace, pool=label))
    second = world.submit(network_job("gone", namespace, pool=gone_label))
    for name in (pool, gone):
        world.wait_pool(name, lambda p: p.status.consecutiveShortfalls >= 1)
        assert group_exists(world, group_of(name))
    replica.kill("net-a")
    for name in (pool, gone):
        world.fake.set_placement_capacity(P4D, None, group=group_of(name))
    world.kube.delete(JOBS, "gone", namespace=namespace, propagation="Background")
    # Its Workload gone too (the garbage collector), or the next leader would claim anew.
    wait_for(lambda: world.workload(second) is None, timeout=60, what="gone's Workload deleted")
    world.kube.delete(POOLS, gone)  # its finalizer waits for the next leader
    replica.start("net-b")
    names = world.register_nodes(joining(world, pool))
    world.wait_check(first, "Ready")
    assert len([c for c in world.launches(pool) if c["outcome"] == "ok"]) == 1
    creates = [c for c in world.fake.calls("CreatePlacementGroup") if group_of(pool) in str(c)]
    assert [c["outcome"] for c in creates] == ["ok", "error:InvalidPlacementGroup.Duplicate"]
    swept = reaper_sweeps(replica.ports["net-b"])
    wait_for(lambda: reaper_sweeps(replica.ports["net-b"]) > swept, timeout=30, what="a sweep")
    assert world.pool(gone) is None
    assert not group_exists(world, group_of(gone))
    assert world.live(gone) == []
    world.delete_nodes(names)


def test_max_spread_releases_a_spread_gang_whole_until_it_fits(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("spread")
    pool = gnp(namespace, label)
    world.fake.set_topology_node_size(3, group=group_of(pool))  # the fourth spills
    submitted = world.submit(network_job("spread", namespace, pool=label, max_spread="1"))
    registered: list[str] = []
    current = joining(world, pool)
    for attempt in (1, 2):  # nodes are assigned at launch: the second set is spread too
        if attempt == 2:
            world.fake.set_topology_node_size(None, group=group_of(pool))
        registered += world.register_nodes(current)
        nxt = joining(world, pool, current.status.activeGeneration)
        assert nxt.status.consecutiveShortfalls == attempt
        assert (nxt.status.lastErrorReason, nxt.status.spread) == ("", 0)
        assert world.live(pool) == sorted(nxt.status.instanceIds)  # the spread set is gone
        assert list(iter_pods(world, namespace)) == []  # no pod ever ran on it
        assert world.check(submitted)["state"] == "Pending"
        current = nxt
    names = world.register_nodes(current)
    world.wait_check(submitted, "Ready")
    ready = world.pool(pool)
    assert ready is not None
    assert (ready.status.spread, ready.status.consecutiveShortfalls) == (1, 0)
    pods = wait_for(
        lambda: [q for q in iter_pods(world, namespace) if q["spec"].get("nodeName")] or None,
        timeout=60,
        what="pods scheduled",
    )
    assert {q["spec"]["nodeName"] for q in pods} <= set(names)
    world.delete_nodes(registered + names)

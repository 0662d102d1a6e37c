"""The joining path never holds a worker on EC2: the reconcile hands its ids to the
batched describe and ends; the answer requeues the pool, which then decides with it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.views.node import INSTANCE_INDEX, instance_index
from atomic_gang_provisioner.views.pool_object import POOL_INDEXERS
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import IDS, T0, instances, launched


def later_cloud(unhealthy: tuple[str, ...] = ()) -> FakeCloud:
    """A describe whose answer comes when the test says so (``held``); EC2's recorded
    answers call ``unhealthy`` stopped; none of them sits in a reported topology."""
    cloud = FakeCloud.unused("read_topology_later")
    cloud.hold("describe_later")
    cloud.add(*(i for i in instances("stopped") if i.instance_id in unhealthy))
    return cloud


def asked(cloud: FakeCloud) -> list[tuple[str, ...]]:
    return [tuple(c["instance_ids"]) for c in cloud.calls("describe_later")]


def ready_node(i: int, since: str = "") -> dict[str, Any]:
    group = launched().status.activeGroup
    ready = {"type": "Ready", "status": "True"} | ({"lastTransitionTime": since} if since else {})
    return {
        "metadata": {
            "name": f"ip-10-0-0-{i}",
            "labels": {keys.POOL: "pretrain", keys.GROUP: group},
        },
        "spec": {"providerID": f"aws:///us-east-1a/{IDS[i]}"},
        "status": {"conditions": [ready]},
    }


def reconcile_at_30s(nodes: list[dict[str, Any]], cloud: FakeCloud) -> RecordingTransport:
    """One reconcile of the launched pool, 30 s after its launch, over these Nodes."""
    transport = RecordingTransport()
    ctx = context(
        settings=settings(),
        transport=transport,
        pools=FakeCache([launched().to_dict()], POOL_INDEXERS),
        now=lambda: T0 + timedelta(seconds=30),
    )
    cache = FakeCache(nodes, {INSTANCE_INDEX: instance_index})
    PoolReconciler(replace(ctx, nodes=cache, observer=cloud), requeue=lambda _: None).reconcile(
        "pretrain"
    )
    return transport


def test_nodes_just_turned_ready_stand_for_the_describe_unless_ec2_said_otherwise() -> None:
    """Ready 5 s ago (inside ec2Api.describeReuseSeconds): Satisfied with no call; the
    same Nodes with one instance EC2 last called unhealthy: the describe is asked."""
    for cloud, ids, phase in (
        (later_cloud(), [], "Satisfied"),
        (later_cloud((IDS[1],)), [IDS], None),
    ):
        since = (T0 + timedelta(seconds=25)).strftime("%Y-%m-%dT%H:%M:%SZ")
        transport = reconcile_at_30s([ready_node(i, since) for i in range(len(IDS))], cloud)
        assert asked(cloud) == [tuple(i) for i in ids]
        assert [w.body["status"]["phase"] for w in transport.writes()] == ([phase] if phase else [])


def test_the_gang_is_not_satisfied_while_a_ready_node_keeps_its_not_ready_taint() -> None:
    """The node lifecycle controller lifts the taint a moment after Ready: pods created
    before that fail to schedule and back off for seconds."""
    since = (T0 + timedelta(seconds=25)).strftime("%Y-%m-%dT%H:%M:%SZ")
    nodes = [ready_node(i, since) for i in range(len(IDS))]
    nodes[-1]["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    phases = []
    for last in (nodes[-1], ready_node(len(IDS) - 1, since)):
        transport = reconcile_at_30s([*nodes[:-1], last], later_cloud())
        phases.append([w.body["status"]["phase"] for w in transport.writes()])
    assert phases == [["Joining"], ["Satisfied"]]


def test_the_describe_is_handed_off_and_its_answer_requeues_the_pool() -> None:
    transport, cloud = RecordingTransport(), later_cloud()
    requeued: list[str] = []
    ctx = context(
        settings=settings(),
        transport=transport,
        pools=FakeCache([launched().to_dict()], POOL_INDEXERS),
        now=lambda: T0 + timedelta(seconds=30),
    )
    nodes = FakeCache([ready_node(i) for i in range(len(IDS))], {INSTANCE_INDEX: instance_index})
    ctx = replace(ctx, nodes=nodes, observer=cloud)
    told: list[tuple[str, str]] = []
    reconciler = PoolReconciler(
        ctx, requeue=requeued.append, claimant_changed=lambda key, phase: told.append((key, phase))
    )
    reconciler.reconcile("pretrain")
    assert asked(cloud) == [tuple(IDS)]
    assert transport.writes() == []  # nothing decided yet, the worker is free
    assert requeued == []
    reconciler.reconcile("pretrain")  # a Node event before the answer: no second describe
    assert len(asked(cloud)) == 1
    cloud.held("describe_later")[0].set_result(instances())
    assert requeued == ["pretrain"]
    reconciler.reconcile("pretrain")
    assert len(asked(cloud)) == 1  # the answer was used, not asked for again
    (write,) = transport.writes()
    assert write.body["status"]["phase"] == "Satisfied"
    # The claimant hears at once, not after the watch, and what the pool now says.
    assert told == [("default/job-a-1", "Satisfied")]


def other_pool(name: str, phase: str, ids: list[str]) -> dict[str, Any]:
    obj = launched(phase=phase, instanceIds=ids).to_dict()
    obj["metadata"]["name"] = name
    return obj


def test_the_join_check_asks_along_for_the_other_joining_pools_and_may_reuse() -> None:
    """Their own checks then find a recent answer (ec2Api.describeReuseSeconds) and cost
    no call; pools in other phases are not asked about, the gangs with the fewest Nodes
    left to turn Ready go first, and a gang with no Node Ready yet is not asked about (it
    would be read again at every window)."""
    cloud = later_cloud()
    pools = [
        launched().to_dict(),
        other_pool("joining", "Joining", ["i-00000000000000aa", "i-00000000000000ab"]),
        other_pool("satisfied", "Satisfied", ["i-00000000000000ba"]),
        other_pool("nearly", "Joining", ["i-00000000000000ca"]),
        other_pool("half", "Joining", ["i-00000000000000da", "i-00000000000000db"]),
    ]
    ctx = context(
        settings=settings(),
        transport=RecordingTransport(),
        pools=FakeCache(pools, POOL_INDEXERS),
        now=lambda: T0 + timedelta(seconds=30),
    )
    ready = [ready_node(i) for i in range(len(IDS))]
    nearly = {
        **ready[0],
        "metadata": {"name": "ip-10-0-1-0", "labels": {keys.POOL: "nearly"}},
        "spec": {"providerID": "aws:///us-east-1a/i-00000000000000ca"},
    }
    half = {
        **ready[0],
        "metadata": {"name": "ip-10-0-2-0", "labels": {keys.POOL: "half"}},
        "spec": {"providerID": "aws:///us-east-1a/i-00000000000000da"},
    }
    nodes = FakeCache([*ready, nearly, half], {INSTANCE_INDEX: instance_index})
    PoolReconciler(replace(ctx, nodes=nodes, observer=cloud), requeue=lambda _: None).reconcile(
        "pretrain"
    )
    # the gangs with a Ready Node, fewest left first: the next to need a check;
    # "joining" has none Ready
    assert [(tuple(c["also"]), c["reuse"]) for c in cloud.calls("describe_later")] == [
        (("i-00000000000000ca", "i-00000000000000da", "i-00000000000000db"), True)
    ]


def test_the_reconciler_holds_a_joining_gangs_next_n_of_n_for_the_progress_interval() -> None:
    """It remembers when it wrote the last n/N (the pure decision is told, not asked)."""
    clock = [T0 + timedelta(seconds=30)]
    transport = RecordingTransport()
    nodes = FakeCache([], {INSTANCE_INDEX: instance_index})
    pools = FakeCache([launched().to_dict()], POOL_INDEXERS)
    ctx = context(settings=settings(), transport=transport, pools=pools, now=lambda: clock[0])
    reconciler = PoolReconciler(
        replace(ctx, nodes=nodes, observer=later_cloud()), requeue=lambda _: None
    )
    counts = []
    for ready, seconds in ((2, 30), (3, 31), (3, 40)):
        clock[0] = T0 + timedelta(seconds=seconds)
        for i in range(ready):
            nodes.upsert(f"ip-10-0-0-{i}", ready_node(i))
        reconciler.reconcile("pretrain")
        writes = transport.writes()
        counts.append([w.body["status"]["readyCount"] for w in writes])
        if writes:  # the watch brings our last write
            stored = writes[-1].body | {
                "metadata": writes[-1].body["metadata"] | {"resourceVersion": str(seconds)}
            }
            pools.upsert("pretrain", stored)
    assert counts == [[2], [2], [2, 3]]  # 3/4 waits until 10 s after 2/4

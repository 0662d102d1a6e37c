"""The pool executor's network steps: one topology read, the Nodes' missing layer labels
patched, a refused patch or a failed read not fatal, and the own group deleted."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.values import TopologyRead
from atomic_gang_provisioner.kube.api_errors import ForbiddenError
from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.views.node import INSTANCE_INDEX, instance_index
from atomic_gang_provisioner.views.pool_object import POOL_INDEXERS
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import IDS, T0, instances, launched, pool

LAYER = "topology.k8s.aws/network-node-layer-{}".format


def net_cloud(read: TopologyRead | None = None) -> FakeCloud:
    """EC2 holds the launched set, each instance under the network nodes ``read`` gives;
    a call other than the describe, the topology read and the group's deletion fails."""
    cloud = FakeCloud.unused("describe_later", "read_topology_later", "delete_placement_group")
    cloud.add(*instances())
    cloud.topology.update((read or TopologyRead()).nodes)
    return cloud


def reads(cloud: FakeCloud) -> list[tuple[str, ...]]:
    return [tuple(ids) for ids in cloud.requests("read_topology_later")]


def node(i: int, **labels: str) -> dict[str, Any]:
    group = launched().status.activeGroup
    return {
        "metadata": {
            "name": f"node-{i}",
            "labels": {keys.POOL: "pretrain", keys.GROUP: group, **labels},
        },
        "spec": {"providerID": f"aws:///us-east-1a/{IDS[i]}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def run(obj: dict[str, Any], cloud: FakeCloud, transport: RecordingTransport) -> dict[str, Any]:
    ctx = context(
        settings=settings(),
        transport=transport,
        pools=FakeCache([obj], POOL_INDEXERS),
        now=lambda: T0 + timedelta(seconds=30),
    )
    nodes = FakeCache(
        [node(0, **{LAYER(1): "top"}), *map(node, range(1, 4))], {INSTANCE_INDEX: instance_index}
    )
    PoolReconciler(replace(ctx, nodes=nodes, launcher=cloud, observer=cloud)).reconcile("pretrain")
    (put,) = [w for w in transport.writes() if w.path.endswith("/status")]
    return dict(put.body["status"])


def joining(
    cloud: FakeCloud, transport: RecordingTransport, *nodes: dict[str, Any]
) -> PoolReconciler:
    """The launched pool's reconciler, with these of its Nodes registered."""
    ctx = context(
        settings=settings(),
        transport=transport,
        pools=FakeCache([launched().to_dict()], POOL_INDEXERS),
        now=lambda: T0 + timedelta(seconds=30),
    )
    cache = FakeCache(list(nodes), {INSTANCE_INDEX: instance_index})
    return PoolReconciler(replace(ctx, nodes=cache, launcher=cloud, observer=cloud))


def test_one_read_then_labels_patched_where_missing() -> None:
    read = TopologyRead(nodes=tuple((iid, ("top", "mid", "b1")) for iid in IDS))
    cloud, transport = net_cloud(read), RecordingTransport()
    status = run(launched().to_dict(), cloud, transport)
    assert reads(cloud) == [tuple(IDS)]
    assert (status["phase"], status["spread"]) == ("Satisfied", 1)
    patches = {w.path: w.body for w in transport.writes() if w.method == "PATCH"}
    assert patches["/api/v1/nodes/node-0"] == {
        "metadata": {"labels": {LAYER(2): "mid", LAYER(3): "b1"}}
    }
    assert patches["/api/v1/nodes/node-3"]["metadata"]["labels"][LAYER(1)] == "top"


def test_a_joining_gang_reads_ahead_without_waiting_for_the_answer() -> None:
    """Two of four Nodes Ready: the read goes out (it fills the cache), the reconcile
    does not wait for it and records nothing of it."""
    cloud, transport = net_cloud(), RecordingTransport()
    cloud.hold("read_topology_later")  # never answered in this test
    joining(cloud, transport, node(0), node(1)).reconcile("pretrain")
    assert reads(cloud) == [tuple(IDS)]
    written = [w.body["status"] for w in transport.writes() if w.path.endswith("/status")]
    assert all(s.get("networkNodes") is None for s in written)
    assert all(s["phase"] == "Joining" for s in written)


def test_a_refused_label_patch_does_not_stop_the_gang() -> None:
    read = TopologyRead(nodes=tuple((iid, ("top", "b1")) for iid in IDS))
    transport = RecordingTransport()
    transport.errors[("PATCH", "/api/v1/nodes/node-1")] = ForbiddenError("denied by policy")
    status = run(launched().to_dict(), net_cloud(read), transport)
    assert status["phase"] == "Satisfied"


def test_a_failed_read_is_decided_on_not_raised() -> None:
    cloud = net_cloud()
    cloud.next("read_topology_later", CloudError("UnauthorizedOperation", "not allowed"))
    status = run(launched().to_dict(), cloud, RecordingTransport())
    assert status["phase"] == "Satisfied"
    assert (status["networkNodes"], status["spread"]) == ({}, 0)


def test_idle_pool_deletes_its_group_and_forgets_it() -> None:
    obj = pool(claim=None, placementGroup="atomic-gang-c-pretrain-1").to_dict()
    cloud = net_cloud()
    status = run(obj, cloud, RecordingTransport())
    assert cloud.requests("delete_placement_group") == ["pretrain"]
    assert status["placementGroup"] == ""


class StoredNodes(RecordingTransport):
    """Answers a Node label patch as the apiserver does: the whole Node, newer."""

    def request(self, method: str, path: str, **kw: Any) -> Any:
        body = super().request(method, path, **kw)
        if method != "PATCH" or not path.startswith("/api/v1/nodes/"):
            return body
        i = int(path.rsplit("-", 1)[1])
        stored = node(i, **body["metadata"]["labels"])
        stored["metadata"]["resourceVersion"] = "50"
        return stored


def test_a_node_is_not_labelled_again_before_the_watch_brings_our_patch() -> None:
    """Two of four Nodes Ready with the read-ahead answered: both get their labels. The
    next Node event comes before the watch has brought those patches: the cache still
    shows them unlabelled, but nothing is patched twice."""
    read = TopologyRead(nodes=tuple((iid, ("top", "b1")) for iid in IDS))
    transport = StoredNodes()
    reconciler = joining(net_cloud(read), transport, node(0), node(1))
    reconciler.reconcile("pretrain")
    labelled = [w.path for w in transport.writes() if w.path.startswith("/api/v1/nodes/")]
    assert sorted(labelled) == ["/api/v1/nodes/node-0", "/api/v1/nodes/node-1"]
    reconciler.reconcile("pretrain")
    again = [w.path for w in transport.writes() if w.path.startswith("/api/v1/nodes/")]
    assert again == labelled

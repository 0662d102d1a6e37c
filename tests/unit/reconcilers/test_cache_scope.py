"""The manager's caches hold what we act on: gang Nodes and the Workloads on our check,
each slim; another team's Node or Workload never reaches a store or a queue."""

from __future__ import annotations

from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.config import ServerSettings
from atomic_gang_provisioner.kube import KubeClient
from atomic_gang_provisioner.kube.transport import Query
from atomic_gang_provisioner.manager import Manager
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.nodes import node_read_changed, node_view, slim_node
from atomic_gang_provisioner.settings import resolve
from atomic_gang_provisioner.workload.view import view
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import RecordingTransport

Obj = dict[str, Any]
CHECK = "atomic-gang-check"


class ListingTransport(RecordingTransport):
    """Answers a GET with a list of ``items`` (what the apiserver selected)."""

    def __init__(self, items: list[Obj]) -> None:
        super().__init__()
        self.items = items

    def request(self, method: str, path: str, *, query: Query = (), **kw: Any) -> Any:
        super().request(method, path, query=query, **kw)
        if method != "GET":
            return kw.get("body")
        return {
            "kind": "List",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "9"},
            "items": self.items,
        }


def manager(items: list[Obj] | None = None) -> tuple[Manager, ListingTransport]:
    transport = ListingTransport(items or [])
    m = Manager(
        settings=resolve(settings(), ServerSettings()),
        client=KubeClient(transport),
        cloud=FakeCloud.unused(),
        metrics=ProvisionerMetrics.create(),
    )
    check(m, CHECK, m.settings.controller_name)
    return m, transport


def check(m: Manager, name: str, controller: str, rv: str = "1") -> None:
    obj = {
        "metadata": {"name": name, "resourceVersion": rv},
        "spec": {"controllerName": controller},
    }
    m.informers.checks._apply({"type": "ADDED", "object": obj})


def node(name: str, *, pool: str | None) -> Obj:
    labels = {"kubernetes.io/hostname": name, "topology.k8s.aws/network-node-layer-1": "nn-1"}
    if pool is not None:
        labels |= {keys.POOL: pool, keys.GROUP: f"{pool}-g1", keys.GENERATION: "1"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "5",
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "csi.volume.kubernetes.io/nodeid": "{}",
            },
            "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {
            "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
            "taints": [{"key": "atomic-gang.k8s.aws/gang", "value": "p", "effect": "NoExecute"}],
        },
        "status": {
            "capacity": {"cpu": "96", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "95", "memory": "1Ti", "nvidia.com/gpu": "8"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "T1"},
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": "T1",
                    "lastTransitionTime": "2026-12-01T10:00:00Z",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                },
            ],
            "images": [
                {"names": [f"registry.example.com/image-{i}:v1"], "sizeBytes": 1} for i in range(40)
            ],
            "nodeInfo": {"kubeletVersion": "v1.36.3"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        },
    }


def workload(name: str, *checks: str, rv: str = "1") -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "namespace": "ns",
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": rv,
            "managedFields": [{"manager": "kueue"}],
        },
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 4,
                    "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                }
            ]
        },
        "status": {"admissionChecks": [{"name": c, "state": "Pending"} for c in checks]},
    }


def queued(m: Manager, controller: str) -> list[str]:
    q = getattr(m.controllers, controller).queue
    out = []
    while len(q):
        key = q.get(timeout=0)
        assert key is not None
        out.append(key)
        q.done(key)
    return sorted(out)


def test_the_node_cache_asks_the_apiserver_only_for_nodes_with_our_pool_label() -> None:
    m, transport = manager([node("gang", pool="p")])
    m.informers.nodes._relist()
    lists = [s for s in transport.sent if s.path == "/api/v1/nodes"]
    assert lists
    assert all(("labelSelector", keys.POOL) in s.query for s in lists)


def test_a_foreign_node_never_reaches_the_store_nor_a_pool() -> None:
    """The selector leaves it out at the apiserver; were one delivered anyway, the
    transform turns it away."""
    m, _ = manager()
    nodes = m.informers.nodes
    for kind in ("ADDED", "MODIFIED", "DELETED"):
        nodes._apply({"type": kind, "object": node("theirs", pool=None)})
    assert nodes.list() == []
    assert queued(m, "pool") == []


def test_a_gang_node_is_kept_slim_and_read_as_the_whole_one() -> None:
    m, _ = manager()
    whole = node("gang", pool="p")
    m.informers.nodes._apply({"type": "ADDED", "object": whole})
    kept = m.informers.nodes.get("gang")
    assert kept is not None
    assert node_view(kept) == node_view(whole)
    assert not node_read_changed(kept, whole)
    assert kept == slim_node(whole)
    for gone in ("managedFields", "annotations"):
        assert gone not in kept["metadata"]
    assert set(kept["status"]) == {"conditions", "allocatable"}
    assert kept["status"]["allocatable"] == {"nvidia.com/gpu": "8"}
    assert queued(m, "pool") == ["p"]


def test_a_node_losing_its_pool_label_leaves_the_cache_and_wakes_its_pool() -> None:
    m, _ = manager()
    nodes = m.informers.nodes
    nodes._apply({"type": "ADDED", "object": node("gang", pool="p")})
    assert queued(m, "pool") == ["p"]
    nodes._apply({"type": "MODIFIED", "object": node("gang", pool=None)})
    assert nodes.list() == []
    assert queued(m, "pool") == ["p"]


def test_a_foreign_workload_never_reaches_the_store_nor_the_queue() -> None:
    m, _ = manager()
    workloads = m.informers.workloads
    for kind in ("ADDED", "MODIFIED", "DELETED"):
        workloads._apply({"type": kind, "object": workload("theirs", "provisioning-check")})
        workloads._apply({"type": kind, "object": workload("unqueued")})
    assert workloads.list() == []
    assert queued(m, "workload") == []


def test_a_workload_on_our_check_is_kept_slim_and_read_as_the_whole_one() -> None:
    m, _ = manager()
    whole = workload("w", "provisioning-check", CHECK)
    m.informers.workloads._apply({"type": "ADDED", "object": whole})
    kept = m.informers.workloads.get("ns/w")
    assert kept is not None
    assert "managedFields" not in kept["metadata"]
    assert kept["spec"]["podSets"][0]["template"] == {"spec": {"containers": [{}]}}
    assert view(kept) == view(whole)
    assert queued(m, "workload") == ["ns/w"]


def test_a_workload_that_loses_our_check_leaves_and_is_reconciled_as_gone() -> None:
    """Its reconcile finds no Workload and releases any claim it held."""
    m, _ = manager()
    workloads = m.informers.workloads
    workloads._apply({"type": "ADDED", "object": workload("w", CHECK)})
    assert queued(m, "workload") == ["ns/w"]
    workloads._apply({"type": "MODIFIED", "object": workload("w", "other", rv="2")})
    assert workloads.list() == []
    assert queued(m, "workload") == ["ns/w"]


def test_our_check_names_changing_lists_the_workloads_again() -> None:
    m, _ = manager()
    workloads = m.informers.workloads
    assert m.scope.names == {CHECK}
    assert workloads._relist_asked.is_set()  # from none to ours (before its first list)
    workloads._relist_asked.clear()
    check(m, "foreign", "example.com/other")  # another controller's check: no relist
    check(m, CHECK, m.settings.controller_name, rv="2")  # ours again, same name: none
    assert not workloads._relist_asked.is_set()
    check(m, "second", m.settings.controller_name)
    assert m.scope.names == {CHECK, "second"}
    assert workloads._relist_asked.is_set()
    workloads._relist_asked.clear()
    m.informers.checks._apply(
        {"type": "DELETED", "object": {"metadata": {"name": CHECK}, "spec": {}}}
    )
    assert m.scope.names == {"second"}
    assert workloads._relist_asked.is_set()


def test_our_check_apply_is_remembered_slim() -> None:
    m, _ = manager()
    m.check_writes.remember(workload("w", CHECK, rv="3"))
    m.informers.workloads._apply({"type": "ADDED", "object": workload("w", CHECK, rv="2")})
    latest = m.check_writes.newest("ns/w")
    assert latest is not None
    assert latest["metadata"]["resourceVersion"] == "3"
    assert "managedFields" not in latest["metadata"]

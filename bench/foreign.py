"""Another team's objects for ``bench.scale --foreign-nodes N --foreign-workloads M``:
N Nodes that are not gang Nodes and M Kueue Workloads in a queue without our check.

The Nodes are shaped as EKS registers a node-group node (labels, annotations, images)
whose kubelet has stopped: their conditions Unknown and the unreachable taint on, as
the node lifecycle controller leaves them, so it has one write a Node left (the
not-ready taint the apiserver adds to every new Node; marking 10,000 fresh Nodes
Unknown would be several). Nothing plays their kubelets: 10,000 heartbeats would take
the whole box, and the watch's label selector keeps them from the controller anyway.
The run waits for the node lifecycle controller to be done with them (and for Kueue to
be done with the Workloads) before its gangs.

The Workloads are as Kueue makes them for a Job (a two-container pod template with env
and volumes), in a ClusterQueue of their own with quota for a hundred of them, so Kueue
admits those and queues the rest. Both kinds are created side by side, as another
team's controllers would, and deleted a shard at a time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from atomic_gang_provisioner.kube import (
    AlreadyExistsError,
    Handlers,
    Informer,
    KubeClient,
    Resource,
)
from atomic_gang_provisioner.kube.objects import KubeObject
from tests.support.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    NODES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)

Obj = dict[str, Any]
NS = "other-team"
QUEUE = "other-team-queue"
CLUSTER_QUEUE = "other-team-cq"
FLAVOR = "other-team-flavor"
LABEL = "bench.atomic-gang.k8s.aws/foreign"
SHARD = "bench.atomic-gang.k8s.aws/shard"  # deleted a shard at a time
SHARDS = 100
ADMITTED = 100  # the other team's quota, in Workloads of one 1-CPU pod
# The apiserver's TaintNodesByCondition puts it on every new Node; the node lifecycle
# controller swaps it for the unreachable taint, one write a Node at its client rate.
NOT_READY = "node.kubernetes.io/not-ready"
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def node(i: int) -> Obj:
    name = f"ip-10-{100 + i // 65536}-{i // 256 % 256}-{i % 256}.ec2.internal"
    zone = ("us-east-1a", "us-east-1b", "us-east-1c")[i % 3]
    ready = "2026-12-01T10:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                LABEL: "true",
                SHARD: str(i % SHARDS),
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                # The kubelet sets the beta labels too: without them the node lifecycle
                # controller adds them to every Node, ahead of the gang Nodes' taint lifts.
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": "m5.2xlarge",
                "node.kubernetes.io/instance-type": "m5.2xlarge",
                "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": zone,
                "failure-domain.beta.kubernetes.io/region": "us-east-1",
                "failure-domain.beta.kubernetes.io/zone": zone,
                "eks.amazonaws.com/nodegroup": "other-team-general",
                "eks.amazonaws.com/capacityType": "ON_DEMAND",
                "eks.amazonaws.com/nodegroup-image": "ami-0123456789abcdef0",
                "k8s.io/cloud-provider-aws": "a94967527effcefb5f5829f529c0a1b9",
            },
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": f"10.100.{i // 256 % 256}.{i % 256}",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": f'{{"ebs.csi.aws.com":"i-f{i:016x}"}}',
            },
        },
        "spec": {
            "providerID": f"aws:///{zone}/i-f{i:016x}",
            "taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "8", "memory": "32386544Ki", "pods": "58"},
            "allocatable": {"cpu": "7910m", "memory": "31369712Ki", "pods": "58"},
            "conditions": [
                {
                    "type": t,
                    "status": "Unknown",
                    "reason": "NodeStatusUnknown",
                    "message": "Kubelet stopped posting node status.",
                    "lastHeartbeatTime": ready,
                    "lastTransitionTime": ready,
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.100.{i // 256 % 256}.{i % 256}"},
                {"type": "Hostname", "address": name},
                {"type": "InternalDNS", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.134-150.224.amzn2023.x86_64",
                "kubeProxyVersion": "v1.36.3-eks-1234567",
                "kubeletVersion": "v1.36.3-eks-1234567",
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250512",
                "machineID": f"ec2{i:029x}",
                "systemUUID": f"ec2{i:029x}",
                "bootID": f"{i:08x}-0000-4000-8000-000000000000",
            },
            "images": [
                {
                    "names": [f"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/image-{k}:v1.{k}"],
                    "sizeBytes": 10_000_000 * (k + 1),
                }
                for k in range(12)
            ],
        },
    }


def workload(i: int) -> Obj:
    env = [{"name": f"TEAM_SETTING_{k}", "value": f"value-{k}-{i}"} for k in range(10)]
    return {
        "apiVersion": KUEUE_API,
        "kind": "Workload",
        "metadata": {
            "name": f"job-etl-{i:05d}-0a1b2",
            "namespace": NS,
            "labels": {LABEL: "true", SHARD: str(i % SHARDS), "app": "etl", "team": "other"},
            "annotations": {"example.com/owner": "data-platform", "example.com/run": str(i)},
        },
        "spec": {
            "queueName": QUEUE,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "metadata": {"labels": {"app": "etl"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "etl",
                                    "image": "registry.example.com/data/etl:2026.12.01",
                                    "command": ["python", "-m", "etl", "--partition", str(i)],
                                    "env": env,
                                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                                },
                                {
                                    "name": "log-shipper",
                                    "image": "registry.example.com/platform/fluent-bit:3.1",
                                    "resources": {"requests": {"cpu": "0", "memory": "0"}},
                                },
                            ],
                            "volumes": [{"name": "scratch", "emptyDir": {}}],
                        },
                    },
                }
            ],
        },
    }


def setup(kube: KubeClient) -> None:
    """The other team's namespace, flavor, ClusterQueue (no admission check) and queue."""
    quota = {"cpu": str(ADMITTED), "memory": f"{2 * ADMITTED}Gi"}
    objects: list[tuple[Resource, Obj]] = [
        (NAMESPACES, {"metadata": {"name": NS}}),
        (
            RESOURCE_FLAVORS,
            {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}},
        ),
        (
            CLUSTER_QUEUES,
            {
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": {"name": CLUSTER_QUEUE},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                    "resourceGroups": [
                        {
                            "coveredResources": list(quota),
                            "flavors": [
                                {
                                    "name": FLAVOR,
                                    "resources": [
                                        {"name": r, "nominalQuota": q} for r, q in quota.items()
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
        ),
        (
            LOCAL_QUEUES,
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": QUEUE, "namespace": NS},
                "spec": {"clusterQueue": CLUSTER_QUEUE},
            },
        ),
    ]
    for res, obj in objects:
        with contextlib.suppress(AlreadyExistsError):
            kube.create(res, obj)


def create(kube: KubeClient, *, nodes: int, workloads: int, threads: int = 16) -> float:
    """Create them all, Nodes and Workloads interleaved evenly; the seconds it took.
    Each object is built by the thread that sends it, and the answers are dropped."""
    builders: dict[str, tuple[Resource, Callable[[int], Obj]]] = {
        "node": (NODES, node),
        "workload": (WORKLOADS, workload),
    }
    work = sorted(
        [(i / max(nodes, 1), "node", i) for i in range(nodes)]
        + [(i / max(workloads, 1), "workload", i) for i in range(workloads)]
    )

    def send(item: tuple[float, str, int]) -> None:
        res, build = builders[item[1]]
        kube.create(res, build(item[2]))

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in pool.map(send, work):
            pass
    return time.monotonic() - t0


def delete(kube: KubeClient, *, threads: int = 4) -> None:
    """A deletecollection a shard, of Workloads and of Nodes: one of all 20,000 Workloads
    outlasts the apiserver's request timeout."""

    def shard(item: tuple[Resource, int]) -> None:
        res, n = item
        selector = [("labelSelector", f"{LABEL}=true,{SHARD}={n}")]
        path = res.path(namespace=NS if res is WORKLOADS else None)
        kube.transport.request("DELETE", path, query=selector, timeout=120)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in pool.map(shard, [(res, n) for res in (WORKLOADS, NODES) for n in range(SHARDS)]):
            pass


class Settled:
    """Follows the other team's objects from watches in this process: how many Nodes and
    Workloads exist, how many Workloads hold quota (QuotaReserved True), and how long
    ago a Workload last changed (created, or written by Kueue)."""

    def __init__(self, kube: KubeClient) -> None:
        self.lock = threading.Lock()
        self.reserved: set[str] = set()
        self.tainted: set[str] = set()  # Nodes the node lifecycle controller has yet to fix
        self.changed = time.monotonic()
        self.workloads = Informer(kube, WORKLOADS, namespace=NS, transform=self._seen)
        self.nodes = Informer(kube, NODES, label_selector=f"{LABEL}=true", transform=self._seen)
        for inf in (self.workloads, self.nodes):
            inf.add_handlers(Handlers(on_delete=self._gone))

    def _seen(self, obj: KubeObject) -> KubeObject:
        conds = (obj.get("status") or {}).get("conditions") or []
        name = str(obj["metadata"]["name"])
        if obj.get("kind") == "Node":
            taints = (obj.get("spec") or {}).get("taints") or []
            with self.lock:
                if any(t.get("key") == NOT_READY for t in taints):
                    self.tainted.add(name)
                else:
                    self.tainted.discard(name)
            return _name_only(obj)
        reserved = any(
            c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conds
        )
        with self.lock:
            self.changed = time.monotonic()
            if reserved:
                self.reserved.add(name)
        return _name_only(obj)

    def _gone(self, obj: KubeObject) -> None:
        with self.lock:
            self.reserved.discard(str(obj["metadata"]["name"]))
            self.tainted.discard(str(obj["metadata"]["name"]))

    def counts(self) -> tuple[int, int, int, float]:
        """(Nodes the node lifecycle controller is done with, Workloads, Workloads holding
        quota, seconds since a Workload last changed)."""
        with self.lock:
            reserved, quiet = len(self.reserved), time.monotonic() - self.changed
            tainted = len(self.tainted)
        nodes = len(self.nodes.list()) - tainted
        return nodes, len(self.workloads.list()), reserved, quiet

    def wait(self, done: Any, *, timeout: float, what: str) -> float:
        """Poll ``done(nodes settled, workloads, reserved, quiet seconds)``; the seconds
        it took."""
        t0 = time.monotonic()
        while not done(*self.counts()):
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"{what}: {self.counts()} after {timeout:.0f} s")
            time.sleep(1.0)  # a progress poll, not a synchronisation
        return time.monotonic() - t0

    def __enter__(self) -> Settled:
        for inf in (self.workloads, self.nodes):
            inf.start()
            inf.wait_for_sync(60)
        return self

    def __exit__(self, *exc: object) -> None:
        for inf in (self.workloads, self.nodes):
            inf.stop()


def _name_only(obj: KubeObject) -> KubeObject:
    m = obj.get("metadata") or {}
    return {"metadata": {k: m[k] for k in ("name", "namespace", "resourceVersion") if k in m}}


def rss_mb(pid: int) -> float:
    """The process's resident set now (VmRSS), in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return (
        next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
        / 1024
    )

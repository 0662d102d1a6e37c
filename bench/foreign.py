"""Another team's objects for ``bench.scale --foreign-nodes N --foreign-workloads M``:
N Nodes that are not gang Nodes and M Kueue Workloads in a queue without our check.

The Nodes are shaped as EKS registers a node-group node (labels, annotations, images,
conditions; no kwok annotation, so nothing plays their kubelet and they send no
heartbeats). The Workloads are as Kueue makes them for a Job (a two-container pod
template with env and volumes) in a ClusterQueue of their own with quota for a few
hundred of them, so Kueue admits those and queues the rest. Both are created side by
side, as another team's controllers would, and deleted with one deletecollection each.
"""

from __future__ import annotations

import contextlib
import threading
import time
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
from atomic_gang_provisioner.kube.types import KubeObject
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
ADMITTED = 100  # the other team's quota, in Workloads of one 1-CPU pod
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
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "m5.2xlarge",
                "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": zone,
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
        "spec": {"providerID": f"aws:///{zone}/i-f{i:016x}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32386544Ki", "pods": "58"},
            "allocatable": {"cpu": "7910m", "memory": "31369712Ki", "pods": "58"},
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "reason": f"Kubelet{t}",
                    "message": f"kubelet reports {t}",
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
            "labels": {LABEL: "true", "app": "etl", "team": "other"},
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
    """Create them all, Nodes and Workloads interleaved evenly; the seconds it took."""
    work: list[tuple[float, Resource, Obj]] = [
        *((i / max(nodes, 1), NODES, node(i)) for i in range(nodes)),
        *((i / max(workloads, 1), WORKLOADS, workload(i)) for i in range(workloads)),
    ]
    work.sort(key=lambda w: w[0])
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda w: kube.create(w[1], w[2]), work))
    return time.monotonic() - t0


def delete(kube: KubeClient) -> None:
    """One deletecollection each: the Workloads of the namespace, the labelled Nodes."""
    selector = [("labelSelector", f"{LABEL}=true")]
    kube.transport.request("DELETE", WORKLOADS.path(namespace=NS), query=selector, timeout=600)
    kube.transport.request("DELETE", NODES.path(), query=selector, timeout=600)


class Settled:
    """Follows the other team's objects from watches in this process: how many Nodes and
    Workloads exist, how many Workloads hold quota (QuotaReserved True), and how long
    ago any of them last changed (Kueue's writes included)."""

    def __init__(self, kube: KubeClient) -> None:
        self.lock = threading.Lock()
        self.reserved: set[str] = set()
        self.changed = time.monotonic()
        self.workloads = Informer(kube, WORKLOADS, namespace=NS, transform=self._seen)
        self.nodes = Informer(kube, NODES, label_selector=f"{LABEL}=true", transform=self._seen)
        self.workloads.add_handlers(Handlers(on_delete=self._gone))

    def _seen(self, obj: KubeObject) -> KubeObject:
        conds = (obj.get("status") or {}).get("conditions") or []
        name = str(obj["metadata"]["name"])
        with self.lock:
            self.changed = time.monotonic()
            if obj.get("kind") == "Workload" and any(
                c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conds
            ):
                self.reserved.add(name)
        return _name_only(obj)

    def _gone(self, wl: KubeObject) -> None:
        with self.lock:
            self.reserved.discard(str(wl["metadata"]["name"]))

    def counts(self) -> tuple[int, int, int, float]:
        """(Nodes, Workloads, Workloads holding quota, seconds since the last change)."""
        with self.lock:
            reserved, quiet = len(self.reserved), time.monotonic() - self.changed
        return len(self.nodes.list()), len(self.workloads.list()), reserved, quiet

    def wait(self, done: Any, *, timeout: float, what: str) -> float:
        """Poll ``done(nodes, workloads, reserved, quiet seconds)``; the seconds it took."""
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

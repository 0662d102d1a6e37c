"""What the demo watches: one snapshot of the Job's world per poll.

The pool (GangNodePool), the Workload's admission check, the gang's Nodes and
the Job's pods come from the apiserver; the live managed instances from the
simulated EC2 (one DescribeInstances, signed with the demo's own access key
so the call log keeps it apart from the controller's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3

from atomic_gang import keys
from atomic_gang_devstack import dev_objects
from atomic_gang_provisioner.kube import KubeClient, NotFoundError, Resource
from atomic_gang_provisioner.kube.resource import EVENTS
from atomic_gang_provisioner.resources import JOBS, NODES, POOLS, WORKLOADS

PODS = Resource("", "v1", "pods", namespaced=True, kind="Pod")
DEMO_KEY = "demo"  # the demo's access key id in the call log


@dataclass(frozen=True)
class NodeState:
    ready: bool
    instance_id: str
    zone: str
    group: str


@dataclass(frozen=True)
class PodState:
    phase: str
    node: str


@dataclass(frozen=True)
class Snapshot:
    pool_phase: str = ""
    instance_ids: tuple[str, ...] = ()
    group: str = ""
    keep_warm_until: str = ""
    check_state: str = ""
    check_message: str = ""
    quota_reserved: bool = False
    admitted: bool = False
    finished: bool = False
    job_complete: bool = False
    nodes: dict[str, NodeState] = field(default_factory=dict)
    pods: dict[str, PodState] = field(default_factory=dict)
    live_instances: int = 0
    pool_events: tuple[tuple[str, str], ...] = ()  # (reason, message), oldest first


def _condition(obj: dict[str, Any], kind: str) -> bool:
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conds)


class Observer:
    def __init__(self, *, kube: KubeClient, endpoint: str, job: str, namespace: str, pool: str):
        self.kube, self.job, self.namespace, self.pool = kube, job, namespace, pool
        self.ec2 = boto3.client(
            "ec2",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=DEMO_KEY,
            aws_secret_access_key=DEMO_KEY,
        )

    def snapshot(self) -> Snapshot:
        return Snapshot(
            **self._pool(),
            **self._workload(),
            job_complete=self._job_complete(),
            nodes=self._nodes(),
            pods=self._pods(),
            live_instances=self._live(),
            pool_events=self._pool_events(),
        )

    def _pool(self) -> dict[str, Any]:
        try:
            status = self.kube.get(POOLS, self.pool).get("status") or {}
        except NotFoundError:
            return {}
        return {
            "pool_phase": str(status.get("phase", "")),
            "instance_ids": tuple(status.get("instanceIds") or ()),
            "group": str(status.get("activeGroup", "")),
            "keep_warm_until": str(status.get("keepWarmUntil") or ""),
        }

    def _workload(self) -> dict[str, Any]:
        items = self.kube.list(WORKLOADS, namespace=self.namespace).items
        mine = [w for w in items if w["metadata"]["name"].startswith(f"job-{self.job}-")]
        if not mine:
            return {}
        wl = mine[0]
        checks = (wl.get("status") or {}).get("admissionChecks") or []
        check: dict[str, Any] = next(
            (c for c in checks if c["name"] == dev_objects.ADMISSION_CHECK), {}
        )
        return {
            "check_state": str(check.get("state", "")),
            "check_message": str(check.get("message", "")),
            "quota_reserved": _condition(wl, "QuotaReserved"),
            "admitted": _condition(wl, "Admitted"),
            "finished": _condition(wl, "Finished"),
        }

    def _job_complete(self) -> bool:
        try:
            return _condition(self.kube.get(JOBS, self.job, namespace=self.namespace), "Complete")
        except NotFoundError:
            return False

    def _nodes(self) -> dict[str, NodeState]:
        out = {}
        for node in self.kube.list(NODES, label_selector=f"{keys.POOL}={self.pool}").items:
            labels = node["metadata"].get("labels") or {}
            provider = str((node.get("spec") or {}).get("providerID", ""))
            out[node["metadata"]["name"]] = NodeState(
                ready=_condition(node, "Ready"),
                instance_id=provider.rsplit("/", 1)[-1],
                zone=labels.get("topology.kubernetes.io/zone", ""),
                group=labels.get(keys.GROUP, ""),
            )
        return out

    def _pods(self) -> dict[str, PodState]:
        selector = f"batch.kubernetes.io/job-name={self.job}"
        pods = self.kube.list(PODS, namespace=self.namespace, label_selector=selector).items
        return {
            p["metadata"]["name"]: PodState(
                phase=str((p.get("status") or {}).get("phase", "")),
                node=str((p.get("spec") or {}).get("nodeName") or ""),
            )
            for p in pods
        }

    def _pool_events(self) -> tuple[tuple[str, str], ...]:
        """The pool's Events (cluster-scoped objects get theirs in ``default``)."""
        selector = f"involvedObject.kind=GangNodePool,involvedObject.name={self.pool}"
        items = self.kube.list(EVENTS, namespace="default", field_selector=selector).items
        items.sort(key=lambda e: str(e.get("firstTimestamp") or e["metadata"]["creationTimestamp"]))
        return tuple((str(e.get("reason", "")), str(e.get("message", ""))) for e in items)

    def _live(self) -> int:
        page = self.ec2.describe_instances(
            Filters=[
                {"Name": f"tag:{keys.POOL}", "Values": [self.pool]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        return sum(len(r["Instances"]) for r in page["Reservations"])

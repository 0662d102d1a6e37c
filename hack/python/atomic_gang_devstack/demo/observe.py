"""What the demo watches: one snapshot of the sample's world per poll.

The pool (GangNodePool), the Workload's admission check, the gang's Nodes, the
sample (a Job, a JobSet or a TrainJob, see :mod:`.samples`) and its pods come
from the apiserver; the live managed instances from the simulated EC2 (one
DescribeInstances, signed with the demo's own access key so the call log keeps
it apart from the controller's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3

from atomic_gang import keys
from atomic_gang.resources import EVENTS, NODES, PODS, POOLS, WORKLOADS
from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.demo.samples import Sample
from atomic_gang_kubelite import Kube, NotFoundError

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
    role: str = ""  # the sample's role label on the pod ("" for a Job's)


@dataclass(frozen=True)
class Snapshot:
    pool_phase: str = ""
    instance_ids: tuple[str, ...] = ()
    group: str = ""
    keep_warm_until: str = ""
    check_state: str = ""
    check_message: str = ""
    check_pod_sets: tuple[str, ...] = ()  # the PodSets our podSetUpdates name
    quota_reserved: bool = False
    admitted: bool = False
    finished: bool = False
    completed: bool = False  # the sample's done condition is True
    nodes: dict[str, NodeState] = field(default_factory=dict)
    pods: dict[str, PodState] = field(default_factory=dict)
    live_instances: int = 0
    pool_events: tuple[tuple[str, str], ...] = ()  # (reason, message), oldest first


def _condition(obj: dict[str, Any], kind: str) -> bool:
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conds)


class Observer:
    def __init__(self, *, kube: Kube, endpoint: str, sample: Sample, events_namespace: str):
        """``events_namespace``: where the controller records a pool's Events."""
        self.kube, self.sample, self.pool = kube, sample, sample.pool
        self.events_namespace = events_namespace
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
            completed=self._completed(),
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
        items = self.kube.list(WORKLOADS, namespace=self.sample.namespace)
        mine = [w for w in items if self.sample.owns_workload(w["metadata"]["name"])]
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
            "check_pod_sets": tuple(str(u["name"]) for u in check.get("podSetUpdates") or ()),
            "quota_reserved": _condition(wl, "QuotaReserved"),
            "admitted": _condition(wl, "Admitted"),
            "finished": _condition(wl, "Finished"),
        }

    def _completed(self) -> bool:
        s = self.sample
        try:
            obj = self.kube.get(s.resource, s.name, namespace=s.namespace)
        except NotFoundError:
            return False
        return _condition(obj, s.done_condition)

    def _nodes(self) -> dict[str, NodeState]:
        out = {}
        for node in self.kube.list(NODES, label_selector=f"{keys.POOL}={self.pool}"):
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
        s = self.sample
        pods = self.kube.list(PODS, namespace=s.namespace, label_selector=s.pod_selector)
        return {
            p["metadata"]["name"]: PodState(
                phase=str((p.get("status") or {}).get("phase", "")),
                node=str((p.get("spec") or {}).get("nodeName") or ""),
                role=str((p["metadata"].get("labels") or {}).get(s.role_label, "")),
            )
            for p in pods
        }

    def _pool_events(self) -> tuple[tuple[str, str], ...]:
        """The pool's Events (a cluster-scoped object's are in the controller's namespace)."""
        selector = f"involvedObject.kind=GangNodePool,involvedObject.name={self.pool}"
        items = self.kube.list(EVENTS, namespace=self.events_namespace, field_selector=selector)
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

"""Shared by the system benches (scale, idle cost): the complete local stack, a
namespace with a LocalQueue, a ClusterQueue quota sized for the run, extra subnets,
process CPU/RSS from /proc, percentiles, and first-seen stamps from watches.

The stack is the one ``make dev-up`` runs (control plane, Kueue, moto + layer,
webhook, provisioner, node-join simulator) in a temporary state dir; every process
is tied to the bench and dies with it.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import boto3
import httpx
from prometheus_client.parser import text_string_to_metric_families

from atomic_gang import keys
from atomic_gang.resources import JOBS, POOLS
from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.components.cloud import FakeAws, fakeaws_endpoint
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions
from atomic_gang_provisioner.kube import ConflictError, Handlers, Informer, KubeClient
from atomic_gang_provisioner.nodes import LAYER_PREFIX as LAYER_LABEL_PREFIX
from atomic_gang_provisioner.nodes import not_ready_taint
from tests.support.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    NODES,
    PODS,
    WORKLOADS,
)

BENCH_KEY = "bench"  # the bench's own access key id in the call log
LEADER = "atomic-gang-provisioner-0"
# The chart's lease timings: the dev stack's 4 s lease is too tight for a 2-core box
# under full load, and a replica that loses its lease exits (nobody restarts it here).
LEASE = {
    "enabled": True,
    "namespace": "default",
    "leaseDurationSeconds": 15,
    "renewDeadlineSeconds": 10,
    "retryPeriodSeconds": 2,
}


def start(
    state_dir: Path,
    *,
    provisioners: int,
    settings: dict[str, Any],
    boot: tuple[float, float],
    control_plane_qps: int | None = None,
) -> tuple[Stack, Context]:
    options = StackOptions(
        state_dir=state_dir,
        detach=False,
        check_stand_in=False,
        cloud=True,
        provisioners=provisioners,
        nodesim=True,
        boot_delay=boot[0],
        boot_jitter=boot[1],
        provisioner_settings={"leaderElection": LEASE, **settings},
        control_plane_qps=control_plane_qps,
    )
    stack = Stack(options, default_components(options))
    return stack, stack.up()


def ec2(ctx: Context) -> Any:
    return boto3.client(
        "ec2",
        region_name="us-east-1",
        endpoint_url=fakeaws_endpoint(ctx),
        aws_access_key_id=BENCH_KEY,
        aws_secret_access_key=BENCH_KEY,
    )


def namespace(kube: KubeClient, name: str, *, queue: bool = True) -> None:
    kube.create(NAMESPACES, {"metadata": {"name": name}})
    if queue:
        kube.create(LOCAL_QUEUES, dev_objects.local_queue(name))


def set_gpu_quota(kube: KubeClient, gpus: int, *, attempts: int = 5) -> None:
    """Room for every gang at once: the dev quota (1000 GPUs) would queue them in Kueue.
    Kueue writes the ClusterQueue's status meanwhile, so a replace at the version read
    may conflict: read it again and retry."""
    for attempt in range(attempts):
        cq = kube.get(CLUSTER_QUEUES, dev_objects.CLUSTER_QUEUE)
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for res in flavor["resources"]:
                    if res["name"] == "nvidia.com/gpu":
                        res["nominalQuota"] = str(gpus)
        try:
            kube.replace(CLUSTER_QUEUES, cq)
            return
        except ConflictError:
            if attempt == attempts - 1:
                raise


def add_subnets(ctx: Context, client: Any, cidrs: dict[str, str]) -> list[str]:
    """Bigger subnets in the seeded VPC (the seeded /24s hold 251 instances each)."""
    vpc = FakeAws().world(ctx)["vpc_id"]
    return [
        client.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for zone, cidr in cidrs.items()
    ]


def queue_times(ctx: Context) -> dict[str, dict[str, float]]:
    """Per controller, from the leader's /metrics: mean queue wait and mean reconcile
    time (seconds) and reconcile count, over the whole run."""
    text = httpx.get(f"http://127.0.0.1:{ctx.port(LEADER)}/metrics", timeout=10).text
    sums: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.endswith(("_sum", "_count")) and "controller" in s.labels:
                sums[(s.name, s.labels["controller"])] = s.value
    out: dict[str, dict[str, float]] = {}
    for (name, ctl), value in sums.items():
        if name.endswith("_count") and name.startswith("atomic_gang_reconcile_duration"):
            n = value or 1.0
            wait = sums.get(("atomic_gang_queue_wait_seconds_sum", ctl), float("nan"))
            took = sums.get(("atomic_gang_reconcile_duration_seconds_sum", ctl), float("nan"))
            out[ctl] = {"reconciles": value, "wait_mean_s": wait / n, "took_mean_s": took / n}
    return out


def controller_pid(ctx: Context) -> int:
    """The provisioner process itself (the stack runs it under a restart wrapper)."""
    wrapper = ctx.state.procs[LEADER].pid
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == wrapper:
            return int(stat.parent.name)
    raise RuntimeError(f"no provisioner process under the wrapper {wrapper}")


def proc_stats(pid: int) -> tuple[float, float]:
    """(peak RSS in MB, CPU seconds) of a live process (raises if it died)."""
    status = Path(f"/proc/{pid}/status").read_text()
    hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return hwm / 1024, (int(fields[11]) + int(fields[12])) / ticks


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _true(obj: dict[str, Any], kind: str) -> bool:
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conds)


class Stamps:
    """First-seen wall-clock times (watches in this process): Node Ready with its group
    and instance id, our check Ready with the group it pinned, each Workload's first
    sight, QuotaReserved, Admitted and Finished; with ``pods``, when each Job was let
    run and each pod's first sight, binding to a Node and Running (the control plane's
    part of a gang's start). ``namespace`` and ``node_selector`` keep the watches to the
    bench's own objects (another team's thousands cost this process nothing)."""

    def __init__(
        self,
        kube: KubeClient,
        *,
        pods: bool = False,
        namespace: str | None = None,
        node_selector: str | None = None,
    ) -> None:
        self.lock = threading.Lock()
        self.node_ready: dict[str, tuple[float, str, str]] = {}  # instance id -> stamp
        self.node_labelled: dict[str, float] = {}  # -> first seen with a network-layer label
        self.node_untainted: dict[str, float] = {}  # -> first seen Ready with no taint
        # that keeps pods off (the node lifecycle controller lifts not-ready after Ready)
        self.node_lapsed: dict[str, float] = {}  # -> first seen not Ready again, alive
        # (a simulated kubelet's lease lagged: the pool's health check describes it)
        self.check_ready: dict[str, tuple[float, str]] = {}
        self.admitted: dict[str, float] = {}
        self.finished: dict[str, float] = {}  # Workload namespace/name -> first seen Finished
        self.workload_seen: dict[str, float] = {}  # -> first seen at all
        self.reserved: dict[str, float] = {}  # -> first seen with Kueue's quota reserved
        self.satisfied: dict[str, float] = {}  # group -> its pool first seen Satisfied
        self.check_writes: dict[str, list[tuple[str, str]]] = {}  # Workload -> its check's
        # (state, message) as each write changed them: our applies, one by one
        self.informers = [
            Informer(kube, NODES, label_selector=node_selector),
            Informer(kube, WORKLOADS, namespace=namespace),
            Informer(kube, POOLS),
        ]
        self.informers[0].add_handlers(Handlers.for_all(self.on_node))
        self.informers[1].add_handlers(Handlers.for_all(self.on_workload))
        self.informers[2].add_handlers(Handlers.for_all(self.on_pool))
        self.pods: dict[str, dict[str, float]] = {}  # namespace/name -> stage -> first seen
        self.unsuspended: dict[str, float] = {}  # Job namespace/name -> first seen running
        if pods:
            self.informers += [
                Informer(kube, PODS, namespace=namespace),
                Informer(kube, JOBS, namespace=namespace),
            ]
            self.informers[3].add_handlers(Handlers.for_all(self.on_pod))
            self.informers[4].add_handlers(Handlers.for_all(self.on_job))

    def __enter__(self) -> Stamps:
        for inf in self.informers:
            inf.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for inf in self.informers:
            inf.stop()

    def on_node(self, obj: dict[str, Any]) -> None:
        labels = obj["metadata"].get("labels") or {}
        iid = str((obj.get("spec") or {}).get("providerID", "")).rsplit("/", 1)[-1]
        now = time.time()
        with self.lock:  # by instance: moto reuses private IPs, so Node names recur
            if _true(obj, "Ready"):
                self.node_ready.setdefault(iid, (now, labels.get(keys.GROUP, ""), iid))
                if not not_ready_taint(obj):
                    self.node_untainted.setdefault(iid, now)
            elif iid in self.node_ready and not obj["metadata"].get("deletionTimestamp"):
                self.node_lapsed.setdefault(iid, now)
            if any(k.startswith(LAYER_LABEL_PREFIX) for k in labels):
                self.node_labelled.setdefault(iid, now)

    def on_pool(self, obj: dict[str, Any]) -> None:
        status = obj.get("status") or {}
        if status.get("phase") == "Satisfied" and status.get("activeGroup"):
            with self.lock:
                self.satisfied.setdefault(str(status["activeGroup"]), time.time())

    def on_job(self, obj: dict[str, Any]) -> None:
        if (obj.get("spec") or {}).get("suspend") is False:
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            with self.lock:
                self.unsuspended.setdefault(key, time.time())

    def on_pod(self, obj: dict[str, Any]) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        seen = ["created"]
        if (obj.get("spec") or {}).get("nodeName"):
            seen.append("bound")
        if (obj.get("status") or {}).get("phase") in ("Running", "Succeeded"):
            seen.append("running")
        now = time.time()
        with self.lock:
            stages = self.pods.setdefault(key, {})
            for stage in seen:
                stages.setdefault(stage, now)

    def on_workload(self, obj: dict[str, Any]) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        now = time.time()
        with self.lock:
            self.workload_seen.setdefault(key, now)
            if _true(obj, "QuotaReserved"):
                self.reserved.setdefault(key, now)
        for check in (obj.get("status") or {}).get("admissionChecks") or []:
            if check.get("name") == dev_objects.ADMISSION_CHECK:
                self._note_check(key, check)
            if check.get("name") == dev_objects.ADMISSION_CHECK and check.get("state") == "Ready":
                updates = check.get("podSetUpdates") or [{}]
                group = (updates[0].get("nodeSelector") or {}).get(keys.GROUP, "")
                with self.lock:
                    self.check_ready.setdefault(key, (now, group))
        if _true(obj, "Admitted"):
            with self.lock:
                self.admitted.setdefault(key, now)
        if _true(obj, "Finished"):
            with self.lock:
                self.finished.setdefault(key, now)

    def _note_check(self, key: str, check: dict[str, Any]) -> None:
        seen = (str(check.get("state")), str(check.get("message")))
        with self.lock:
            writes = self.check_writes.setdefault(key, [])
            if not writes or writes[-1] != seen:
                writes.append(seen)

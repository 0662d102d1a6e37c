"""What the provisioner e2e tests drive: provisioner replicas as real processes,
the simulated EC2 (moto + our layer) through boto3 and its control API, and the
real apiserver through our own kube client. Nodes are registered by the test
(kwok makes them Ready); the node-join simulator is a later piece."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import httpx
import yaml

from atomic_gang import keys
from atomic_gang.resources import JOBS, NODES, POOLS, WORKLOADS, Resource
from atomic_gang_devstack import dev_objects, procs
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components.cloud import fakeaws_endpoint, provisioner_env
from atomic_gang_devstack.components.kwok import fake_node
from atomic_gang_fakeaws.control import ControlClient
from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.kube import GoneError, KubeClient, NotFoundError
from tests.support.wait import wait_for

LEASES = Resource("coordination.k8s.io", "v1", "leases", namespaced=True, kind="Lease")
CHECK = dev_objects.ADMISSION_CHECK


@dataclass
class Replicas:
    """Provisioner processes with one settings file; killed at the end."""

    ctx: Context
    settings: Path
    lease: str
    log_dir: Path
    running: dict[str, procs.ProcRecord] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    def start(self, name: str, **env: str) -> None:
        port = self.ctx.picker.pick()
        self.ports[name] = port
        full = {
            **provisioner_env(self.ctx, identity=name, port=port, settings=self.settings),
            **env,
        }
        self.running[name] = procs.spawn(
            name,
            [sys.executable, "-m", "atomic_gang_provisioner"],
            log=self.log_dir / f"{name}.log",
            env=full,
            die_with_parent=True,
        )

    def kill(self, name: str) -> None:
        rec = self.running.pop(name)
        os.killpg(rec.pid, signal.SIGKILL)  # spawn() makes each process a group leader

    def exited(self, name: str) -> int | None:
        return procs.exit_code(self.running[name])

    def forget(self, name: str) -> None:
        self.running.pop(name, None)

    def stop_all(self) -> None:
        for rec in self.running.values():
            procs.stop(rec, grace=10)
        self.running.clear()

    def ready(self, name: str) -> bool:
        """Caches synced; the elector campaigns from here on."""
        try:
            return httpx.get(f"http://127.0.0.1:{self.ports[name]}/readyz", timeout=5).is_success
        except httpx.HTTPError:
            return False

    def metrics(self, name: str) -> str:
        return httpx.get(f"http://127.0.0.1:{self.ports[name]}/metrics", timeout=10).text

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")


def _owned_by(obj: dict[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])


def _our_check(wl: dict[str, Any]) -> dict[str, Any]:
    """Our AdmissionCheckState on the Workload ({} when it has none yet)."""
    for c in (wl.get("status") or {}).get("admissionChecks") or []:
        if c["name"] == CHECK:
            return dict(c)
    return {}


def reaper_sweeps(port: int) -> float:
    """``atomic_gang_reaper_sweeps_total`` of the provisioner serving on ``port`` (0 when
    it is not serving yet)."""
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except httpx.HTTPError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("atomic_gang_reaper_sweeps_total "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@dataclass
class World:
    ctx: Context
    kube: KubeClient
    fake: ControlClient
    ec2: Any

    @classmethod
    def connect(cls, ctx: Context, *, access_key: str = "testing") -> World:
        """``access_key`` signs the test's own EC2 calls (the call log is split by it)."""
        endpoint = fakeaws_endpoint(ctx)
        ec2 = boto3.client(
            "ec2",
            region_name="us-east-1",
            endpoint_url=endpoint,
            aws_access_key_id=access_key,
            aws_secret_access_key=access_key,
        )
        return cls(
            ctx, KubeClient.from_kubeconfig(ctx.admin_kubeconfig()), ControlClient(endpoint), ec2
        )

    def replicas(self, tmp: Path, lease: str, **overrides: Any) -> Replicas:
        data = {
            **dev_objects.DEV_SETTINGS,
            "leaderElection": {
                "enabled": True,
                "namespace": "default",
                "leaseName": lease,
                "leaseDurationSeconds": 3,
                "renewDeadlineSeconds": 2,
                "retryPeriodSeconds": 0.25,
            },
            "acquireRetry": {"backoffBaseSeconds": 0.3, "backoffMaxSeconds": 1.0},
            **overrides,
        }
        path = tmp / "settings.yaml"
        path.write_text(yaml.safe_dump(data))
        return Replicas(self.ctx, path, lease, tmp)

    @property
    def pool_events_namespace(self) -> str:
        """Where the replicas write Events about pools (cluster-scoped): kube-system,
        which tenants do not read (the apiserver allows only it and "default")."""
        return "kube-system"

    # -- kube ------------------------------------------------------------------
    def submit(self, job: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.kube.create(JOBS, job)
        return created

    def workload(self, job: dict[str, Any]) -> dict[str, Any] | None:
        ns, uid = job["metadata"]["namespace"], job["metadata"]["uid"]
        for wl in self.kube.list(WORKLOADS, namespace=ns).items:
            if _owned_by(wl, uid):
                return wl
        return None

    def check(self, job: dict[str, Any]) -> dict[str, Any]:
        return _our_check(self.workload(job) or {})

    def wait_check(self, job: dict[str, Any], state: str, timeout: float = 60) -> dict[str, Any]:
        """Our check on the Job's Workload in ``state``, from every version of the Workload
        since the Job was created (a watch, not a poll: Kueue deactivates a Workload whose
        check is Rejected and resets the check to Pending within milliseconds)."""
        deadline = time.monotonic() + timeout
        rv = str(job["metadata"]["resourceVersion"])
        while (left := deadline - time.monotonic()) > 0:
            try:
                found, rv = self._watch_check(job, state, rv, left)
            except GoneError:  # history compacted: what is there now, then from here on
                if (current := self.check(job)).get("state") == state:
                    return current
                ns = job["metadata"]["namespace"]
                found, rv = None, self.kube.list(WORKLOADS, namespace=ns).resource_version
            if found is not None:
                return found
        raise TimeoutError(
            f"timed out after {timeout}s waiting for check {state}: {self.check(job)}"
        )

    def _watch_check(
        self, job: dict[str, Any], state: str, rv: str, seconds: float
    ) -> tuple[dict[str, Any] | None, str]:
        """(the check once a version of the Job's Workload shows it in ``state``, or None
        when the watch ends first; the last resourceVersion seen)."""
        ns, uid = job["metadata"]["namespace"], job["metadata"]["uid"]
        with self.kube.watch(
            WORKLOADS, namespace=ns, resource_version=rv, timeout_seconds=max(1, int(seconds))
        ) as stream:
            for ev in stream:
                wl = ev["object"]
                rv = str(wl["metadata"].get("resourceVersion") or rv)
                if ev["type"] == "BOOKMARK" or not _owned_by(wl, uid):
                    continue
                if (check := _our_check(wl)).get("state") == state:
                    return check, rv
        return None, rv

    def pool(self, name: str) -> GangNodePool | None:
        try:
            return GangNodePool.from_dict(self.kube.get(POOLS, name))
        except NotFoundError:
            return None

    def wait_pool(
        self, name: str, pred: Callable[[GangNodePool], bool], timeout: float = 60, what: str = ""
    ) -> GangNodePool:
        def probe() -> GangNodePool | None:
            p = self.pool(name)
            return p if p is not None and pred(p) else None

        return wait_for(probe, timeout=timeout, what=what or f"pool {name}")

    def register_nodes(self, pool: GangNodePool, count: int | None = None) -> list[str]:
        """Nodes for the first ``count`` instances, as nodeadm would register them."""
        names = []
        for iid in pool.status.instanceIds[:count]:
            labels = {
                keys.POOL: pool.name,
                keys.GROUP: pool.status.activeGroup,
                keys.MANAGED: "true",
            }
            node = fake_node(f"node-{iid}", labels=labels)
            node["spec"] = {
                "providerID": f"aws:///us-east-1a/{iid}",
                "taints": [{"key": keys.GANG_TAINT, "value": pool.name, "effect": "NoExecute"}],
            }
            self.kube.create(NODES, node)
            names.append(node["metadata"]["name"])
        return names

    def delete_nodes(self, names: list[str]) -> None:
        for name in names:
            with contextlib.suppress(NotFoundError):
                self.kube.delete(NODES, name)

    def lease_holder(self, lease: str) -> str:
        try:
            obj = self.kube.get(LEASES, lease, namespace="default")
        except NotFoundError:
            return ""
        return str((obj.get("spec") or {}).get("holderIdentity") or "")

    # -- simulated EC2 ---------------------------------------------------------
    def live(self, pool: str) -> list[str]:
        out = []
        pages = self.ec2.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": f"tag:{keys.POOL}", "Values": [pool]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        for page in pages:
            for res in page["Reservations"]:
                out += [i["InstanceId"] for i in res["Instances"]]
        return sorted(out)

    def launches(self, pool: str) -> list[dict[str, Any]]:
        """RunInstances calls (successful or not) made for ``pool``."""
        return [c for c in self.fake.calls("RunInstances") if pool in str(c)]


def iter_pods(world: World, namespace: str) -> Iterator[dict[str, Any]]:
    pods = Resource("", "v1", "pods", namespaced=True, kind="Pod")
    yield from world.kube.list(pods, namespace=namespace).items

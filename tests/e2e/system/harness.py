"""What the system tests drive: the whole stack as ``make dev-up`` runs it (control
plane, Kueue, moto + layer, webhook, two provisioner replicas, the node-join
simulator), reached through the same clients a user or operator would use.

Tests read EC2 with an access key of their own (``e2e``), so the call log's
``caller`` tells the provisioner's calls (``testing``) from the test's and the
simulator's (``nodesim``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml

from atomic_gang import keys
from atomic_gang.resources import EVENTS, JOBS, NODES, WORKLOADS
from atomic_gang_devstack import dev_objects, procs
from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.components.cloud import provisioner_env
from atomic_gang_devstack.components.simulated import nodesim_url
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions
from atomic_gang_fakeaws.control import ControlClient
from atomic_gang_nodesim.control import NodeSimClient
from atomic_gang_provisioner.kube import KubeClient, NotFoundError
from tests.e2e.kube import Kube
from tests.e2e.provisioner.harness import CHECK, LEASES, World, iter_pods
from tests.support.wait import wait_for

CONTROLLER_KEY = "testing"
SAMPLE_JOB = REPO_ROOT / "hack" / "demo" / "allreduce-pretrain.yaml"
REPLICAS = ("atomic-gang-provisioner-0", "atomic-gang-provisioner-1")
LEASE = "atomic-gang-provisioner"
CLUSTER = str(dev_objects.DEV_SETTINGS["clusterName"])
WARM_REUSE_BUDGET_SECONDS = 2.0  # create to Admitted on a warm set
BILLING_STATES = ("pending", "running", "stopping", "stopped")


def sample_job(
    name: str, namespace: str, *, pool: str, count: int = 4, runs_for: str = "3s", **ann: str
) -> dict[str, Any]:
    """The sample Job (``hack/demo``), renamed, with pool label ``pool``, annotations
    overridden (``keep_warm_ttl="5s"``) and pods that run ``runs_for`` on kwok."""
    job: dict[str, Any] = yaml.safe_load(SAMPLE_JOB.read_text())
    meta = job["metadata"]
    meta.update(name=name, namespace=namespace)
    meta["labels"][keys.POOL] = pool
    meta["annotations"][keys.COUNT] = str(count)
    meta["annotations"].update({keys.PREFIX + k.replace("_", "-"): v for k, v in ann.items()})
    job["spec"].update(parallelism=count, completions=count)
    template = job["spec"]["template"]
    # The demo's one-pod-per-node anti-affinity selects the Job's own pods, by name.
    (term,) = template["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    term["labelSelector"]["matchLabels"]["batch.kubernetes.io/job-name"] = name
    template["spec"]["terminationGracePeriodSeconds"] = 0
    template["metadata"]["annotations"] = {
        "pod-complete.stage.kwok.x-k8s.io/delay": runs_for,
        "pod-complete.stage.kwok.x-k8s.io/jitter-delay": runs_for,
    }
    return job


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return dict(cond)
    return None


@dataclass
class System:
    stack: Stack
    ctx: Context
    world: World
    kubectl: Kube
    sim: NodeSimClient
    killed: list[str] = field(default_factory=list)

    @classmethod
    def connect(cls, stack: Stack, ctx: Context) -> System:
        world = World.connect(ctx, access_key="e2e")
        kubectl = Kube(ctx.bins.path("kubectl"), ctx.admin_kubeconfig(), ctx.dir / "kubectl-cache")
        return cls(stack, ctx, world, kubectl, NodeSimClient(nodesim_url(ctx)))

    @property
    def kube(self) -> KubeClient:
        return self.world.kube

    @property
    def fake(self) -> ControlClient:
        return self.world.fake

    # -- cluster -----------------------------------------------------------------
    def job(self, job: dict[str, Any]) -> dict[str, Any]:
        m = job["metadata"]
        found: dict[str, Any] = self.kube.get(JOBS, m["name"], namespace=m["namespace"])
        return found

    def complete(self, job: dict[str, Any]) -> bool:
        return condition(self.job(job), "Complete") is not None

    def gang_nodes(self, pool: str) -> dict[str, dict[str, Any]]:
        items = self.kube.list(NODES, label_selector=f"{keys.POOL}={pool}").items
        return {n["metadata"]["name"]: n for n in items}

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        return list(iter_pods(self.world, namespace))

    def _events_of(self, namespace: str, name: str) -> list[dict[str, Any]]:
        return self.kube.list(
            EVENTS, namespace=namespace, field_selector=f"involvedObject.name={name}"
        ).items

    def events(self, namespace: str, name: str) -> list[tuple[str, str]]:
        items = self._events_of(namespace, name)
        return [(str(e["reason"]), str(e.get("message", ""))) for e in items]

    def pool_events(self, pool: str) -> list[tuple[str, str]]:
        """Events about GangNodePool ``pool``: a cluster-scoped object, whose Events the
        provisioner writes to its own namespace."""
        return self.events(self.world.pool_events_namespace, pool)

    def event_count(self, namespace: str, name: str, reason: str) -> int:
        """How many times ``reason`` was recorded: identical events are folded into one
        object whose ``count`` (or ``series.count``) grows."""
        items = self._events_of(namespace, name)
        return sum(
            max(int(e.get("count") or 1), int((e.get("series") or {}).get("count") or 1))
            for e in items
            if e.get("reason") == reason
        )

    # -- simulated EC2 -----------------------------------------------------------
    def ever_launched(self, pool: str) -> list[str]:
        """Every instance of the pool in any state (terminated ones included)."""
        pages = self.world.ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": f"tag:{keys.POOL}", "Values": [pool]}]
        )
        return sorted(
            i["InstanceId"] for p in pages for r in p["Reservations"] for i in r["Instances"]
        )

    def managed_live(self) -> dict[str, str]:
        """Every instance tagged managed for the dev cluster that still bills (id → pool)."""
        pages = self.world.ec2.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": f"tag:{keys.MANAGED}", "Values": ["true"]},
                {"Name": f"tag:{keys.CLUSTER}", "Values": [CLUSTER]},
                {"Name": "instance-state-name", "Values": list(BILLING_STATES)},
            ]
        )
        instances = [i for p in pages for r in p["Reservations"] for i in r["Instances"]]
        tags = [{t["Key"]: t["Value"] for t in i.get("Tags") or []} for i in instances]
        return {
            i["InstanceId"]: t.get(keys.POOL, "?") for i, t in zip(instances, tags, strict=True)
        }

    def controller_calls(self, action: str, pool: str | None = None) -> list[dict[str, Any]]:
        calls = [c for c in self.fake.calls(action) if c["caller"] == CONTROLLER_KEY]
        return [c for c in calls if pool is None or pool in str(c["params"])]

    # -- provisioner replicas ----------------------------------------------------
    def leader(self) -> str:
        try:
            lease = self.kube.get(LEASES, LEASE, namespace=self.ctx.options.namespace)
        except NotFoundError:
            return ""
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        return next((r for r in REPLICAS if holder.startswith(r)), "")

    def leader_identity(self) -> str:
        """The Lease's holderIdentity as written ("" while nobody holds it)."""
        try:
            lease = self.kube.get(LEASES, LEASE, namespace=self.ctx.options.namespace)
        except NotFoundError:
            return ""
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    def kill(self, replica: str) -> None:
        """SIGKILL, as the kubelet's OOM killer or a node loss would."""
        os.killpg(self.ctx.state.procs[replica].pid, signal.SIGKILL)
        self.killed.append(replica)

    def revive(self) -> None:
        """Start every killed replica again (same ports and settings)."""
        while self.killed:
            self.stack.start_component(self.killed.pop())


def crashing_leader(system: System, name: str) -> Any:
    """Both replicas killed; one that dies right after its next launch (between EC2's
    answer and its status write) leads instead. Its process, for ``procs.exit_code``."""
    for replica in REPLICAS:
        system.kill(replica)
    port = system.ctx.picker.pick()
    settings = system.ctx.dir / "provisioner" / "settings.yaml"
    env = {
        **provisioner_env(system.ctx, identity="crashy", port=port, settings=settings),
        "ATOMIC_GANG_FAULT_CRASH_AFTER_LAUNCH": "1",
    }
    crashy = procs.spawn(
        name,
        [sys.executable, "-m", "atomic_gang_provisioner"],
        log=system.ctx.log_path(name),
        env=env,
        die_with_parent=True,
    )
    wait_for(lambda: system.leader_identity().startswith("crashy"), timeout=30, what="crashy")
    return crashy


@contextmanager
def running(options: StackOptions) -> Iterator[System]:
    """The whole stack ``options`` names, up for the block, then down."""
    stack = Stack(options, default_components(options))
    ctx = stack.up()
    system = System.connect(stack, ctx)
    try:
        yield system
    finally:
        system.kube.close()
        stack.down()


@contextmanager
def sampling(probe: Callable[[], Any], *, every: float = 0.2) -> Iterator[list[Any]]:
    """Call ``probe`` on a thread until the block ends; yields the samples so far.

    Used to check invariants over a whole scenario (never a pod on a partial gang),
    not to synchronise: waits are ``wait_for`` with deadlines.
    """
    samples: list[Any] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            # A failed read (the apiserver busy) is a missed sample, no more.
            with contextlib.suppress(Exception):
                samples.append(probe())
            stop.wait(every)

    thread = threading.Thread(target=loop, daemon=True, name="e2e-sampler")
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join(timeout=30)


# -- invariants shared by the scenarios ------------------------------------------
def assert_warm_reuse_fast(elapsed: float) -> None:
    """Scenario 4: a Job on a warm pool goes from create to Admitted within the budget."""
    assert elapsed <= WARM_REUSE_BUDGET_SECONDS, (
        f"warm reuse took {elapsed:.2f}s from create to Admitted "
        f"(budget {WARM_REUSE_BUDGET_SECONDS}s)"
    )


def assert_no_managed_instances_left(system: System, *, timeout: float = 90) -> None:
    """Nothing managed is left billing in moto for the whole cluster (every pool, not
    only the test's), waiting out keep-warm windows still running."""
    try:
        wait_for(lambda: not system.managed_live(), timeout=timeout, what="0 managed instances")
    except TimeoutError:
        raise AssertionError(f"managed instances still billing: {system.managed_live()}") from None


def assert_pool_released(system: System, pool: str, *, timeout: float = 90) -> None:
    """Nothing of ``pool`` is left billing, waiting out its keep-warm window (where other
    tests' pools share the cluster and may keep theirs warm)."""
    try:
        wait_for(lambda: not system.world.live(pool), timeout=timeout, what=f"{pool} released")
    except TimeoutError:
        raise AssertionError(f"{pool} still billing: {system.world.live(pool)}") from None


@dataclass(frozen=True)
class Gate:
    """One reading of a Workload's gate, then of its gang (in that order)."""

    admitted: bool
    check_ready: bool
    finished: bool
    group: str
    ready: int  # Ready Nodes carrying the pool's active group


def gate(system: System, namespace: str, job: str, pool: str) -> Gate:
    """The Workload is read before the Nodes: while a gang forms, Ready Nodes only grow,
    so a sample can overcount the Nodes Ready at admission but never undercount; a
    sample showing fewer than N is a real violation, never a race of the probe."""
    wls = system.kube.list(WORKLOADS, namespace=namespace).items
    refs = [(w, w["metadata"].get("ownerReferences") or []) for w in wls]
    wl = next((w for w, rs in refs if any(r.get("name") == job for r in rs)), None)
    checks = ((wl or {}).get("status") or {}).get("admissionChecks") or []
    ours: dict[str, Any] = next((c for c in checks if c.get("name") == CHECK), {})
    found = system.world.pool(pool)
    group = found.status.activeGroup if found is not None else ""
    nodes = system.gang_nodes(pool).values()
    ready = [
        n
        for n in nodes
        if condition(n, "Ready") and n["metadata"]["labels"].get(keys.GROUP) == group
    ]
    return Gate(
        admitted=condition(wl, "Admitted") is not None,
        check_ready=ours.get("state") == "Ready",
        finished=condition(wl, "Finished") is not None,
        group=group,
        ready=len(ready),
    )


def assert_gated_on_full_gang(samples: list[Gate], count: int) -> None:
    """Every sample with the Workload admitted (or our check Ready) and not yet finished
    shows ``count`` Ready Nodes of the active group."""
    gated = [s for s in samples if (s.admitted or s.check_ready) and not s.finished]
    assert any(s.admitted for s in gated), f"no sample saw the Workload admitted: {samples[-3:]}"
    short = [s for s in gated if not s.group or s.ready != count]
    assert not short, f"gate open with a partial gang ({len(short)}/{len(gated)}): {short[0]}"


@contextmanager
def admitted_only_on_full_gang(
    system: System, namespace: str, *, job: str, pool: str, count: int = 4
) -> Iterator[list[Gate]]:
    """Sample the gate over the block, then assert :func:`assert_gated_on_full_gang`."""
    with sampling(lambda: gate(system, namespace, job, pool), every=0.1) as samples:
        yield samples
    assert_gated_on_full_gang(list(samples), count)

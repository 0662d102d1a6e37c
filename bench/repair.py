"""A broken node: repair in place against release-all, side by side in one run.

One complete local stack (``make dev-up``'s: control plane, Kueue, moto + layer,
webhook, one provisioner, the node-join simulator booting each instance in ``--boot`` ±
``--jitter`` s). Two phases on it, one after the other: **repair** (Jobs with ``repair:
auto``, the default) and **release-all** (``repair: never``: the whole set is released
and Kueue requeues the Workload for a fresh gang). Each phase runs, for every gang size
of ``--gangs``, one gang Job (pods that run for an hour; ``backoffLimit`` lets the Job
restart a pod) and breaks one of its nodes once all N pods have run ``--settle`` s (the
node monitoring agent's ``AcceleratedHardwareReady=False``; its grace is 0 here, so the
failure is seen at once), in two capacity regimes:

- **held**: EC2 capacity held at what the gang needs (N): whatever is released comes back;
- **scarce**: the market takes the capacity the pool gives back, leaving room for the
  broken node's replacement only (k = 1), for ``--scarce-seconds``.

Per failure it prints the healthy instance-seconds thrown away (the running time of the
healthy instances terminated), the time from the failure to all N pods Running again, the
join time of the nodes launched for it (their launch to the last one Ready), our EC2
calls naming the pool or its instances in between, and whether the gang came back within
``--recover-timeout``. Targets (issue 52): 0 thrown away by a repair; time back ≤ 1.2 ×
(join time of k nodes) + 10 s; every failure recovered when there is room for k.

Usage: .venv/bin/python -m bench.repair [--gangs 8,32] [--regimes held,scarce]
       [--boot 20] [--jitter 5] [--settle 10] [--recover-timeout 300] [--scarce-seconds 150]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from atomic_gang import keys
from atomic_gang.pool_access import namespaced_name
from atomic_gang.resources import JOBS, NODES, PODS, POOLS
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components.cloud import fakeaws_endpoint
from atomic_gang_devstack.components.simulated import nodesim_url
from atomic_gang_fakeaws.control import ControlClient
from atomic_gang_nodesim.control import NodeSimClient
from atomic_gang_provisioner.kube import KubeClient, NotFoundError
from bench import system_stack as sys_stack
from tests.e2e.system.harness import sample_job

ZONE, TYPE = "us-east-1a", "p4d.24xlarge"
GPU = "AcceleratedHardwareReady"
TICK = 0.25
SETTINGS = {
    "acquireAttemptsBeforeRetry": 100000,
    "acquireRetry": {"backoffBaseSeconds": 1, "backoffMaxSeconds": 5},
    "joinDeadlineSeconds": 300,
    "healthGraceSeconds": 5,
    "nodeHealth": {"conditions": [{"type": GPU, "status": "False", "graceSeconds": 0}]},
    "repair": {"maxNodes": 4, "deadlineSeconds": 600},
}
PHASES = (("repair", "auto"), ("release-all", "never"))


@dataclass
class Failure:
    """One broken node and what it cost."""

    phase: str
    regime: str
    count: int
    thrown: float = 0.0  # healthy instance-seconds terminated
    back: float | None = None  # failure → N pods Running again (None: not within the timeout)
    join: float | None = None  # the launch for it → its last Node Ready
    launched: int = 0  # instances launched for it
    calls: int = 0  # our EC2 calls naming the pool or its instances

    @property
    def bound(self) -> float | None:
        """The issue's bound on ``back``: 1.2 × (join time of the nodes launched) + 10 s."""
        return None if self.join is None else 1.2 * self.join + 10


class Bench:
    def __init__(self, ctx: Context, args: argparse.Namespace) -> None:
        self.ctx, self.args = ctx, args
        self.kube = KubeClient.from_kubeconfig(ctx.admin_kubeconfig())
        self.fake = ControlClient(fakeaws_endpoint(ctx))
        self.sim = NodeSimClient(nodesim_url(ctx))
        self.ec2 = sys_stack.ec2(ctx)
        self.seq = 0
        self.market: Market | None = None

    def run(self, phase: str, repair: str, regime: str, count: int) -> Failure:
        self.seq += 1
        ns = f"repair-{self.seq}"
        label = f"{phase}-{regime}-{count}"  # the Job's name and pool label
        sys_stack.namespace(self.kube, ns)
        self.fake.set_capacity(ZONE, TYPE, count)
        job = sample_job(label, ns, pool=label, count=count, runs_for="1h", keep_warm_ttl="0s")
        job["metadata"]["annotations"][keys.REPAIR] = repair
        job["spec"]["backoffLimit"] = 100
        self.kube.create(JOBS, job)
        self._until(lambda: self._running(ns) == count, 300, f"{label}: {count} pods Running")
        time.sleep(self.args.settle)  # the gang trains a while before a node breaks
        return self._break(ns, label, count, phase, regime)

    def _break(self, ns: str, label: str, count: int, phase: str, regime: str) -> Failure:
        out = Failure(phase=phase, regime=regime, count=count)
        pool = namespaced_name(label, ns)
        launched_at = self._launch_times(pool)
        victim = sorted(launched_at)[0]
        before_calls = len(self.fake.calls())
        t0 = time.time()
        self.sim.set_condition(victim, GPU, "False", reason="NvidiaXID79Error")
        with self._market(pool, count, regime):
            self._until(lambda: self._running(ns) < count, 60, f"{pool}: a pod stopped")
            deadline = time.monotonic() + self.args.recover_timeout
            while time.monotonic() < deadline:
                if self._running(ns) == count:
                    out.back = time.time() - t0
                    break
                time.sleep(TICK)
        calls = [c for c in self.fake.calls()[before_calls:] if c["caller"] == "testing"]
        ours = {pool, *launched_at, *self._launch_times(pool)}
        out.calls = sum(1 for c in calls if any(x in str(c["params"]) for x in ours))
        terminated = {
            iid: c["at"]
            for c in calls
            if c["action"] == "TerminateInstances"
            for iid in _ids(c["params"])
            if iid in launched_at and iid != victim
        }
        out.thrown = sum(at - launched_at[iid] for iid, at in terminated.items())
        fresh = {i: at for i, at in self._launch_times(pool).items() if i not in launched_at}
        out.launched = len(fresh)
        ready = self._ready_times(pool, fresh)
        if fresh and len(ready) == len(fresh):
            out.join = max(ready.values()) - min(fresh.values())
        self._clean(ns, label, pool)
        return out

    @contextmanager
    def _market(self, pool: str, count: int, regime: str) -> Iterator[None]:
        """``scarce``: once the pool holds fewer than N − 1 instances, the market has
        taken what it gave back, leaving room for one replacement, for
        ``--scarce-seconds``; then the capacity comes back."""
        if regime == "scarce":
            self.market = Market(self, pool, count, self.args.scarce_seconds)
        try:
            yield
        finally:
            self.market = None
            self.fake.set_capacity(ZONE, TYPE, None)

    def _until(self, ok: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ok():
                return
            time.sleep(TICK)
        raise TimeoutError(what)

    def _running(self, ns: str) -> int:
        if self.market is not None:
            self.market.tick()
        pods = self.kube.list(PODS, namespace=ns).items
        return sum(
            1
            for p in pods
            if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
        )

    def _launch_times(self, pool: str) -> dict[str, float]:
        """The pool's live instances and their launch times (epoch seconds)."""
        page = self.ec2.describe_instances(
            Filters=[
                {"Name": f"tag:{keys.POOL}", "Values": [pool]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        return {
            i["InstanceId"]: i["LaunchTime"].timestamp()
            for r in page["Reservations"]
            for i in r["Instances"]
        }

    def _ready_times(self, pool: str, ids: dict[str, float]) -> dict[str, float]:
        """When each of ``ids``'s Node turned Ready (epoch seconds)."""
        out: dict[str, float] = {}
        for node in self.kube.list(NODES, label_selector=f"{keys.POOL}={pool}").items:
            iid = str(node["spec"].get("providerID", "")).rsplit("/", 1)[-1]
            ready = next(
                (c for c in node["status"].get("conditions") or [] if c.get("type") == "Ready"),
                None,
            )
            if iid in ids and ready is not None and ready.get("status") == "True":
                at = datetime.fromisoformat(str(ready["lastTransitionTime"]).replace("Z", "+00:00"))
                out[iid] = at.timestamp()
        return out

    def _clean(self, ns: str, job: str, pool: str) -> None:
        with contextlib.suppress(NotFoundError):
            self.kube.delete(JOBS, job, namespace=ns, propagation="Background")

        def released() -> bool:
            try:
                phase = (self.kube.get(POOLS, pool).get("status") or {}).get("phase")
            except NotFoundError:
                return True
            return phase == "Idle" and not self._launch_times(pool)

        self._until(released, 300, f"{pool} released")


@dataclass
class Market:
    """Other customers in the zone: they take what the pool releases (room for one)."""

    bench: Bench
    pool: str
    count: int
    seconds: float
    taken_at: float | None = None

    def tick(self) -> None:
        held = len(self.bench._launch_times(self.pool))
        if self.taken_at is None and held < self.count - 1:
            self.bench.fake.set_capacity(ZONE, TYPE, held + 1)
            self.taken_at = time.monotonic()
        elif self.taken_at is not None and time.monotonic() - self.taken_at > self.seconds:
            self.bench.fake.set_capacity(ZONE, TYPE, self.count)


def _ids(params: dict[str, Any]) -> list[str]:
    return [str(v) for k, v in params.items() if k.startswith("InstanceId")]


def report(failures: list[Failure]) -> None:
    print(
        "\n| phase | regime | N | thrown away (instance-s) | back to N Running | "
        "join of the launched | bound 1.2×join+10 | launched | EC2 calls | recovered |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for f in failures:
        back = f"{f.back:.1f} s" if f.back is not None else "no"
        join = f"{f.join:.1f} s" if f.join is not None else "-"
        bound = f"{f.bound:.1f} s" if f.bound is not None else "-"
        print(
            f"| {f.phase} | {f.regime} | {f.count} | {f.thrown:.0f} | {back} | {join} | "
            f"{bound} | {f.launched} | {f.calls} | {'yes' if f.back is not None else 'no'} |"
        )
    repairs = [f for f in failures if f.phase == "repair"]
    whole = [f for f in failures if f.phase == "release-all"]
    met = [f.back is not None and f.bound is not None and f.back <= f.bound for f in repairs]
    print(
        f"\nrepair: thrown away {sum(f.thrown for f in repairs):.0f} instance-s, "
        f"recovered {sum(f.back is not None for f in repairs)}/{len(repairs)}, "
        f"within 1.2×join+10 s {sum(met)}/{len(repairs)}"
    )
    print(
        f"release-all: thrown away {sum(f.thrown for f in whole):.0f} instance-s, "
        f"recovered {sum(f.back is not None for f in whole)}/{len(whole)}"
    )
    pairs = [
        (r, w)
        for r in repairs
        for w in whole
        if (r.regime, r.count) == (w.regime, w.count) and r.back and w.back
    ]
    for r, w in pairs:
        assert r.back is not None
        assert w.back is not None
        ratio = r.back / w.back
        print(
            f"back to N Running, {r.regime} N={r.count}: repair/release-all "
            f"{r.back:.1f}/{w.back:.1f} s = {ratio:.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gangs", default="8,32", help="gang sizes, comma-separated")
    ap.add_argument("--regimes", default="held,scarce", help="held and/or scarce")
    ap.add_argument("--boot", type=float, default=20.0, help="instance boot + join, seconds")
    ap.add_argument("--jitter", type=float, default=5.0, help="extra boot per instance, up to")
    ap.add_argument("--settle", type=float, default=10.0, help="seconds the gang runs first")
    ap.add_argument("--recover-timeout", type=float, default=300.0)
    ap.add_argument("--scarce-seconds", type=float, default=150.0)
    args = ap.parse_args()
    sizes = [int(x) for x in args.gangs.split(",")]
    regimes = args.regimes.split(",")
    failures: list[Failure] = []
    with tempfile.TemporaryDirectory() as d:
        stack, ctx = sys_stack.start(
            Path(d) / "stack", provisioners=1, settings=SETTINGS, boot=(args.boot, args.jitter)
        )
        try:
            kube = KubeClient.from_kubeconfig(ctx.admin_kubeconfig())
            sys_stack.set_gpu_quota(kube, 10000)
            ControlClient(fakeaws_endpoint(ctx)).set_throttling(False)
            bench = Bench(ctx, args)
            for regime in regimes:
                for count in sizes:
                    for phase, repair in PHASES:
                        print(f"{phase}, {regime}, N={count}", flush=True)
                        failures.append(bench.run(phase, repair, regime, count))
        finally:
            stack.down()
    report(failures)


if __name__ == "__main__":
    main()

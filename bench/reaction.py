"""How fast the provisioner reacts, on the real local control plane.

Two latencies per gang, observed by watches in this process (same clock):
  nodes  from the N-th Node turning Ready to our AdmissionCheckState turning Ready
  launch from the Workload's QuotaReserved to the first RunInstances call
         (the simulated EC2 stamps each call with the wall clock)
Gangs run one after another (no queueing), after one untimed cold gang (reported
separately: it pays the first SSM AMI and IAM profile lookups). Targets: p50 <= 300 ms,
p99 <= 1 s.

Usage: .venv/bin/python -m bench.reaction [--gangs 20] [--count 4]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions
from atomic_gang_provisioner.kube import Handlers, Informer
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import job
from tests.e2e.provisioner.harness import World
from tests.support.resources import LOCAL_QUEUES, NAMESPACES, NODES, WORKLOADS
from tests.support.wait import wait_for


class Stamps:
    """First-seen wall-clock times of Node Ready, QuotaReserved and our check Ready."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.node_ready: dict[str, float] = {}
        self.quota: dict[str, float] = {}
        self.check_ready: dict[str, float] = {}

    def on_node(self, obj: dict[str, Any]) -> None:
        conds = (obj.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
            with self.lock:
                self.node_ready.setdefault(obj["metadata"]["name"], time.time())

    def on_workload(self, obj: dict[str, Any]) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        status = obj.get("status") or {}
        now = time.time()
        with self.lock:
            if any(
                c.get("type") == "QuotaReserved" and c.get("status") == "True"
                for c in status.get("conditions") or []
            ):
                self.quota.setdefault(key, now)
            if any(
                c.get("name") == dev_objects.ADMISSION_CHECK and c.get("state") == "Ready"
                for c in status.get("admissionChecks") or []
            ):
                self.check_ready.setdefault(key, now)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_gang(world: World, stamps: Stamps, namespace: str, count: int) -> tuple[float, float]:
    label = f"rx-{uuid.uuid4().hex[:6]}"
    pool = gnp(namespace, label)
    submitted = world.submit(job(label, namespace, pool=label, count=count, keep_warm_ttl="0s"))
    p = world.wait_pool(pool, lambda q: q.status.phase == "Joining", what="Joining")
    wl = world.workload(submitted)
    assert wl is not None
    key = f"{namespace}/{wl['metadata']['name']}"
    nodes = world.register_nodes(p)
    wait_for(lambda: key in stamps.check_ready, timeout=60, what="check Ready")
    launch_at = min(c["at"] for c in world.launches(pool))
    wait_for(lambda: all(n in stamps.node_ready for n in nodes), timeout=30, what="nodes seen")
    nodes_ready = max(stamps.node_ready[n] for n in nodes)
    world.delete_nodes(nodes)
    return stamps.check_ready[key] - nodes_ready, launch_at - stamps.quota[key]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--gangs", type=int, default=20)
    ap.add_argument("--count", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        options = StackOptions(state_dir=tmp / "stack", cloud=True, detach=False)
        stack = Stack(options, default_components(options))
        ctx = stack.up()
        try:
            measure(World.connect(ctx), tmp, args)
        finally:
            stack.down()


def measure(world: World, tmp: Path, args: argparse.Namespace) -> None:
    reps = world.replicas(tmp, "bench-reaction")
    reps.start("bench")
    stamps = Stamps()
    informers = [Informer(world.kube, NODES), Informer(world.kube, WORKLOADS)]
    informers[0].add_handlers(Handlers.for_all(stamps.on_node))
    informers[1].add_handlers(Handlers.for_all(stamps.on_workload))
    for inf in informers:
        inf.start()
    try:
        wait_for(lambda: reps.ready("bench") and world.lease_holder(reps.lease), timeout=60)
        ns = f"bench-{uuid.uuid4().hex[:6]}"
        world.kube.create(NAMESPACES, {"metadata": {"name": ns}})
        world.kube.create(LOCAL_QUEUES, dev_objects.local_queue(ns))
        cold = run_gang(world, stamps, ns, args.count)  # first gang: cold AMI/profile caches
        rows = [run_gang(world, stamps, ns, args.count) for _ in range(args.gangs)]
    finally:
        for inf in informers:
            inf.stop()
        reps.stop_all()
    report([r[0] for r in rows], [r[1] for r in rows], args)
    print(
        f"first (cold) gang, not in the table: nodes->ready {cold[0] * 1000:.0f} ms, "
        f"quota->launch {cold[1] * 1000:.0f} ms (SSM AMI and IAM profile lookups)"
    )


def report(nodes: list[float], launch: list[float], args: argparse.Namespace) -> None:
    print(f"\n## reaction bench: {args.gangs} gangs of {args.count}, one at a time\n")
    print("| latency | p50 ms | p99 ms | max ms | target p50 / p99 | met |")
    print("|---|---|---|---|---|---|")
    for name, xs in (
        ("N-th Node Ready -> check Ready", nodes),
        ("QuotaReserved -> first RunInstances", launch),
    ):
        p50, p99 = _pct(xs, 0.5) * 1000, _pct(xs, 0.99) * 1000
        ok = p50 <= 300 and p99 <= 1000
        print(
            f"| {name} | {p50:.0f} | {p99:.0f} | {max(xs) * 1000:.0f} | 300 / 1000 | "
            f"{'yes' if ok else 'NO'} |"
        )
    print(
        f"\nmean nodes->ready {statistics.mean(nodes) * 1000:.0f} ms; "
        f"mean quota->launch {statistics.mean(launch) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()

"""Idle cost, the headline: one trace through two provisioners, in one run.

The trace (``bench/idle_trace.py``: 48 gang Jobs, N ∈ {2, 4, 8}, 10–30 s each,
arriving over 200 s; p4d.24xlarge capacity in us-east-1a swinging 20 → 6 → 20 → 5
→ 24) is replayed in real time against the complete local stack twice, one after
the other on the same simulated EC2: first with our provisioner (Kueue + our
AdmissionCheck, N-or-0 launches, keep-warm 0s), then with the incremental baseline
(``bench/incremental_baseline.py``; plain Jobs, one node per RunInstances, partial
sets kept). The bench plays the workload: a job is done once all N of its pods have
run together for its duration (then its Job is deleted). Billing is sampled every
0.5 s from the simulated EC2 and split by ``idle_trace.Ledger``. Throttling is off in
both phases so only capacity limits either provisioner.

The controller's own cost metric (``atomic_gang_instance_seconds_total``) is scraped at the
end of our phase and printed beside the ledger's figures.

Before both, unless ``--without-today``, the same trace runs through our provisioner
with the short-capacity-cell cache off (``ec2Api.shortCellSeconds: 0``, how it was
before the cache) on a stack of its own: the issue's targets compare the two.

Usage: .venv/bin/python -m bench.idle_cost [--jobs 48] [--seed 7] [--window 200]
       [--max-seconds 900] [--ours-only | --baseline-only] [--without-today]

``--baseline-only`` runs the baseline alone on a stack without our provisioner (with
``--jobs 6 --window 60``: about two minutes), to check it on a small trace.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from atomic_gang import keys
from atomic_gang.pool_access import namespaced_name
from atomic_gang.resources import JOBS, PODS
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components.cloud import FakeAws, fakeaws_endpoint
from atomic_gang_fakeaws.control import ControlClient
from atomic_gang_provisioner.kube import KubeClient, NotFoundError
from bench import system_stack as sys_stack
from bench.idle_report import billed_by_state, report, report_alone, report_metric
from bench.idle_trace import Ledger, Trace, TraceJob, Use, classify, make_trace
from bench.incremental_baseline import IncrementalBaseline, baseline_job, cluster_join
from tests.e2e.system.harness import sample_job

ZONE, TYPE, CLUSTER = "us-east-1a", "p4d.24xlarge", "atomic-gang-dev"
SETTINGS = {
    "acquireAttemptsBeforeRetry": 100000,
    "acquireRetry": {"backoffBaseSeconds": 1, "backoffMaxSeconds": 5},
    "joinDeadlineSeconds": 300,
}
TICK = 0.5
CACHE_OFF = {**SETTINGS, "ec2Api": {"shortCellSeconds": 0}}
OFF = "ours, cache off"
LAUNCH_LOG = ("RunInstances", "TerminateInstances")


@dataclass
class JobRun:
    job: TraceJob
    submitted: float | None = None
    all_running: float | None = None
    done: float | None = None


@dataclass
class PhaseResult:
    name: str
    runs: list[JobRun]
    ledger: Ledger
    launches: Counter[str] = field(default_factory=Counter)
    makespan: float = 0.0
    # atomic_gang_instance_seconds_total over the phase's pools, by state (ours only).
    metric: dict[str, float] = field(default_factory=dict)


class Phase:
    """Replays ``trace`` in real time; ``submit`` creates one job's Kubernetes Job;
    ``pool_of`` names the pool tag its instances carry (the job's name by default)."""

    def __init__(
        self,
        ctx: Context,
        trace: Trace,
        namespace: str,
        submit: Callable[[TraceJob], Any],
        pool_of: Callable[[str], str] = str,
    ):
        self.ctx, self.trace, self.ns, self.submit = ctx, trace, namespace, submit
        self.job_of = {pool_of(j.name): j.name for j in trace.jobs}  # pool tag -> job
        self.kube = KubeClient.from_kubeconfig(ctx.admin_kubeconfig())
        self.fake = ControlClient(fakeaws_endpoint(ctx))
        self.ec2 = sys_stack.ec2(ctx)
        self.runs = {j.name: JobRun(j) for j in trace.jobs}
        self.ledger = Ledger()
        self.started = 0.0  # wall clock at the start of run()

    def run(self, max_seconds: float) -> float:
        t0 = time.monotonic()
        self.started = time.time()
        last = t0
        while time.monotonic() - t0 < max_seconds:
            now = time.monotonic()
            t = now - t0
            self.fake.set_capacity(ZONE, TYPE, self.trace.slots_at(t))
            for run in self.runs.values():
                if run.submitted is None and run.job.arrival <= t:
                    self.submit(run.job)
                    run.submitted = t
            live = self._sample(t, now - last)
            last = now
            if all(r.done is not None for r in self.runs.values()) and not live:
                break
            time.sleep(max(0.0, TICK - (time.monotonic() - now)))  # the sampling period
        return time.monotonic() - t0

    def _sample(self, t: float, dt: float) -> int:
        live = self._live()
        running: Counter[str] = Counter(
            p["metadata"]["labels"].get("batch.kubernetes.io/job-name", "")
            for p in self.kube.list(PODS, namespace=self.ns).items
            if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
        )
        uses = [
            (self._use(run, n, running[name]), n)
            for name, n in live.items()
            if (run := self.runs.get(name)) is not None
        ]
        self.ledger.add(dt, uses)
        missing = [
            run.job.count - live.get(name, 0)
            for name, run in self.runs.items()
            if run.submitted is not None and run.done is None and live.get(name, 0) < run.job.count
        ]
        self.ledger.add_free(dt, self.trace.slots_at(t) - sum(live.values()), missing)
        for run in self.runs.values():
            self._advance(run, running[run.job.name], t)
        return sum(live.values())

    @staticmethod
    def _use(run: JobRun, live: int, running: int) -> Use:
        return classify(live=live, count=run.job.count, running=running, done=run.done is not None)

    def _advance(self, run: JobRun, running: int, t: float) -> None:
        if run.submitted is None or run.done is not None:
            return
        if run.all_running is None and running >= run.job.count:
            run.all_running = t
        if run.all_running is not None and t - run.all_running >= run.job.duration:
            with contextlib.suppress(NotFoundError):
                self.kube.delete(JOBS, run.job.name, namespace=self.ns, propagation="Background")
            run.done = t

    def _live(self) -> dict[str, int]:
        """Live instances by job (by pool tag where no job of the trace has it)."""
        out: Counter[str] = Counter()
        page = self.ec2.describe_instances(
            Filters=[
                {"Name": f"tag:{keys.CLUSTER}", "Values": [CLUSTER]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ],
            MaxResults=1000,
        )
        for res in page["Reservations"]:
            for inst in res["Instances"]:
                tags = {x["Key"]: x["Value"] for x in inst.get("Tags", [])}
                pool = tags.get(keys.POOL, "")
                out[self.job_of.get(pool, pool)] += 1
        return dict(out)


def run_ours(
    ctx: Context,
    trace: Trace,
    max_seconds: float,
    name: str = "ours (N-or-0)",
    calls_out: Path | None = None,
) -> PhaseResult:
    ns = "idle-ours"
    kube = KubeClient.from_kubeconfig(ctx.admin_kubeconfig())
    sys_stack.namespace(kube, ns)

    def submit(job: TraceJob) -> None:
        spec = sample_job(job.name, ns, pool=job.name, count=job.count, runs_for="1h")
        spec["metadata"]["annotations"][keys.KEEP_WARM_TTL] = "0s"
        kube.create(JOBS, spec)

    def pool_of(name: str) -> str:
        return namespaced_name(name, ns)  # the pool the job's label names

    phase = Phase(ctx, trace, ns, submit, pool_of)
    before = len(phase.fake.calls("RunInstances"))
    span = phase.run(max_seconds)
    ours = [c for c in phase.fake.calls("RunInstances")[before:] if c["caller"] == "testing"]
    launches = Counter(
        "ok" if c["outcome"] == "ok" else c["outcome"].removeprefix("error:") for c in ours
    )
    metric = billed_by_state(ctx, {pool_of(j.name) for j in trace.jobs})
    if calls_out is not None:
        write_timeline(calls_out, phase, before)
    return PhaseResult(name, list(phase.runs.values()), phase.ledger, launches, span, metric)


def write_timeline(path: Path, phase: Phase, before: int) -> None:
    """Our launches and terminations and each job's times, as JSON lines (for analysis)."""
    with path.open("w") as out:
        out.write(json.dumps({"started": phase.started}) + "\n")
        for call in phase.fake.calls()[before:]:
            if call["caller"] == "testing" and call["action"] in LAUNCH_LOG:
                out.write(json.dumps({k: call[k] for k in ("at", "action", "params", "outcome")}))
                out.write("\n")
        for run in phase.runs.values():
            times = {"submitted": run.submitted, "all_running": run.all_running, "done": run.done}
            out.write(json.dumps({"job": run.job.name, "count": run.job.count, **times}) + "\n")


def run_baseline(ctx: Context, trace: Trace, max_seconds: float) -> PhaseResult:
    ns = "idle-baseline"
    kube = KubeClient.from_kubeconfig(ctx.admin_kubeconfig())
    sys_stack.namespace(kube, ns, queue=False)
    endpoint = fakeaws_endpoint(ctx)
    once = Config(retries={"total_max_attempts": 1, "mode": "standard"})
    session = boto3.session.Session(
        aws_access_key_id="baseline", aws_secret_access_key="x", region_name="us-east-1"
    )
    world = FakeAws().world(ctx)
    baseline = IncrementalBaseline(
        ec2=session.client("ec2", endpoint_url=endpoint, config=once),
        kube=kube,
        namespace=ns,
        subnet=world["subnets"][ZONE],
        join=cluster_join(session.client("eks", endpoint_url=endpoint), CLUSTER),
        cluster=CLUSTER,
        instance_profile=world["instance_profile"],  # the seeded node role's
    )
    thread = threading.Thread(target=baseline.run, daemon=True, name="baseline")
    thread.start()
    phase = Phase(
        ctx, trace, ns, lambda j: kube.create(JOBS, baseline_job(j.name, ns, count=j.count))
    )
    try:
        span = phase.run(max_seconds)
    finally:
        baseline.stop.set()
        thread.join(timeout=30)
    return PhaseResult(
        "incremental baseline", list(phase.runs.values()), phase.ledger, baseline.launches, span
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jobs", type=int, default=48)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--window", type=float, default=200, help="seconds the arrivals spread over")
    ap.add_argument("--max-seconds", type=float, default=900, help="per provisioner")
    only = ap.add_mutually_exclusive_group()
    only.add_argument(
        "--ours-only",
        action="store_true",
        help="skip the baseline: only our phase, and the cost metric against the ledger",
    )
    only.add_argument(
        "--baseline-only",
        action="store_true",
        help="only the incremental baseline, on a stack without our provisioner",
    )
    ap.add_argument(
        "--without-today",
        action="store_true",
        help="skip the first phase (ours with the short-cell cache off)",
    )
    ap.add_argument(
        "--calls-out",
        type=Path,
        help="write our phase's launches, terminations and job times here (JSON lines)",
    )
    args = ap.parse_args()
    trace = make_trace(jobs=args.jobs, seed=args.seed, window=args.window)
    if args.baseline_only:
        _, alone = _on_stack(trace, args, SETTINGS, ours=False, baseline=True)
        assert alone is not None
        report_alone(trace, alone)
        return
    today = None
    if not (args.ours_only or args.without_today):
        today, _ = _on_stack(trace, args, CACHE_OFF, ours=True, baseline=False, name=OFF)
    ours, base = _on_stack(trace, args, SETTINGS, ours=True, baseline=not args.ours_only)
    assert ours is not None
    if base is not None:
        report(trace, ours, base, today=today)
    else:  # --ours-only: our phase's own figures
        report_alone(trace, ours)
    report_metric(ours)


def _on_stack(
    trace: Trace,
    args: argparse.Namespace,
    settings: dict[str, Any],
    *,
    ours: bool,
    baseline: bool,
    name: str = "ours (N-or-0)",
) -> tuple[PhaseResult | None, PhaseResult | None]:
    """Our phase and/or the baseline's, one after the other on one fresh stack."""
    with tempfile.TemporaryDirectory() as d:
        stack, ctx = sys_stack.start(
            Path(d) / "stack", provisioners=int(ours), settings=settings, boot=(2.0, 2.0)
        )
        try:
            sys_stack.set_gpu_quota(KubeClient.from_kubeconfig(ctx.admin_kubeconfig()), 10000)
            ControlClient(fakeaws_endpoint(ctx)).set_throttling(False)
            result = None
            if ours:
                print(f"phase: {name}", flush=True)
                result = run_ours(ctx, trace, args.max_seconds, name, args.calls_out)
                if baseline:  # it runs alone: our reaper would take its instances for orphans
                    stack.stop_component(sys_stack.LEADER)
            if not baseline:
                return result, None
            print("phase: the incremental baseline", flush=True)
            return result, run_baseline(ctx, trace, args.max_seconds)
        finally:
            stack.down()


if __name__ == "__main__":
    main()

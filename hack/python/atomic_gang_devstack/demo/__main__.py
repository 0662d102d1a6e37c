"""``python -m atomic_gang_devstack.demo``: see the package docstring."""

from __future__ import annotations

import argparse
import collections
import logging
import sys
import time
from pathlib import Path

from atomic_gang_devstack.bins import CONTROL_PLANE, NODE, REPO_ROOT, BinaryMissingError, Bins
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.components.cloud import fakeaws_endpoint
from atomic_gang_devstack.demo.observe import Observer, Snapshot
from atomic_gang_devstack.demo.samples import JOB, SAMPLES, Sample
from atomic_gang_devstack.demo.story import Story
from atomic_gang_devstack.kubectl import KubectlError
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions
from atomic_gang_devstack.waits import ComponentFailedError
from atomic_gang_fakeaws.control import ControlClient
from atomic_gang_kubelite import Kube

CONTROLLER_KEY = "testing"  # the provisioner's (dummy) access key id in the call log
# Where the provisioner records Events about pools (cluster-scoped): kube-system, which
# tenants do not read (the apiserver allows only it and "default" for such Events).
CLUSTER_EVENTS_NAMESPACE = "kube-system"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="make demo", description=__doc__)
    p.add_argument(
        "--story",
        choices=sorted(SAMPLES),
        default=JOB.story,
        help="which sample to apply and narrate (default: %(default)s); "
        + "; ".join(
            f"{s.story} ({s.file.relative_to(REPO_ROOT)}): {s.about}" for s in SAMPLES.values()
        ),
    )
    p.add_argument("--state-dir", type=Path, default=REPO_ROOT / ".dev" / "demo")
    p.add_argument("--timeout", type=float, default=300, help="give up after this many seconds")
    p.add_argument("-v", "--verbose", action="store_true", help="show the launcher's log")
    p.add_argument(
        "--in-cluster",
        action="store_true",
        help="run the webhook and the controller as pods of our images on a real kubelet node,"
        " installed with helm (make demo-cluster; needs root; the job story only)",
    )
    return p


def _options(state_dir: Path, sample: Sample, *, in_cluster: bool = False) -> StackOptions:
    return StackOptions(
        state_dir=state_dir.resolve(),
        kubeconfig_out=state_dir.resolve() / "kubeconfig",
        detach=False,  # every process dies with the demo, Ctrl-C included
        check_stand_in=False,
        cloud=True,
        # In-cluster the chart brings the webhook, 2 controller replicas and the queues.
        webhook=not in_cluster,
        queues=not in_cluster,
        real_node=in_cluster,
        in_cluster=in_cluster,
        provisioners=0 if in_cluster else 2,
        fake_nodes=sample.ordinary_nodes,  # where the pods off the gang run
        nodesim=True,
        boot_delay=2.0,
        boot_jitter=3.0,
        capacity_file=REPO_ROOT / "hack" / "devstack-capacity.yaml",
    )


def say(t: float | None, text: str) -> None:
    stamp = "       " if t is None else f"[{t:5.1f}s]"
    print(f"{stamp} {text}", flush=True)


def _show_setup(ctx: Context, sample: Sample) -> None:
    kc = ctx.options.kubeconfig_out
    where = "as pods on a real node (helm)" if ctx.options.in_cluster else "as processes"
    jobset = ", JobSet" if ctx.options.jobset else ""
    trainer = ", Trainer" if ctx.options.trainer else ""
    say(
        None,
        f"control plane, Kueue{jobset}{trainer}, moto, webhook and 2 provisioners {where}, "
        f"simulator: ready in {ctx.state.ready_seconds:.0f}s (KUBECONFIG={kc})",
    )
    out = ctx.kubectl.run("get", "admissioncheck,resourceflavor,clusterqueue,localqueue", "-A")
    for line in filter(None, out.stdout.splitlines()):
        say(None, "  " + line)
    say(None, f"$ kubectl apply -f {sample.file.relative_to(REPO_ROOT)}")


def _watch(ctx: Context, sample: Sample, *, timeout: float) -> Story:
    kube = Kube.from_kubeconfig(ctx.admin_kubeconfig())
    observer = Observer(
        kube=kube,
        endpoint=fakeaws_endpoint(ctx),
        sample=sample,
        events_namespace=CLUSTER_EVENTS_NAMESPACE,
    )
    story, prev = Story(sample), Snapshot()
    try:
        ctx.kubectl.run("apply", "-f", str(sample.file))
        t0 = time.monotonic()
        story.mark("applied", 0.0)
        while not story.done and time.monotonic() - t0 < timeout:
            cur = observer.snapshot()
            t = time.monotonic() - t0
            for line in story.update(prev, cur, t):
                say(t, line)
            prev = cur
            time.sleep(0.3)  # a poll interval, not a synchronisation
    finally:
        kube.close()
    return story


def _controller_calls(control: ControlClient) -> dict[str, int]:
    counts = collections.Counter(
        c["action"] for c in control.calls() if c["caller"] == CONTROLLER_KEY
    )
    return dict(counts)


def run(ctx: Context, timeout: float, *, sample: Sample = JOB) -> int:
    _show_setup(ctx, sample)
    control = ControlClient(fakeaws_endpoint(ctx))
    try:
        control.clear_calls()  # from here on the log holds this sample's calls only
        story = _watch(ctx, sample, timeout=timeout)
        for line in story.summary(_controller_calls(control)):
            print(line, flush=True)
    finally:
        control.close()
    if not story.done:
        print(f"\nthe demo did not finish within {timeout:.0f}s; logs: {ctx.dir / 'logs'}")
    return 0 if story.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    sample = SAMPLES[args.story]
    if args.in_cluster and sample is not JOB:
        parser.error(f"--in-cluster tells the {JOB.story} story only, not --story {sample.story}")
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s devstack %(message)s")
    options = _options(args.state_dir, sample, in_cluster=args.in_cluster)
    stack = Stack(options, default_components(options))
    try:
        Bins.load().ensure(CONTROL_PLANE + (NODE if options.real_node else ()))
        say(None, "starting the local stack (about 20-40 s) ...")
        return run(stack.up(), args.timeout, sample=sample)
    except KeyboardInterrupt:
        print("\ninterrupted: tearing everything down", flush=True)
        return 130
    except (BinaryMissingError, ComponentFailedError, KubectlError) as exc:
        print(f"demo failed: {exc}", file=sys.stderr)
        return 1
    finally:
        stack.down()
        say(None, "stack stopped")


if __name__ == "__main__":
    sys.exit(main())

"""``python -m atomic_gang_devstack up|down|status``: the local dev stack.

``up`` builds missing binaries, starts the stack in the background (the
processes outlive this command) and writes the admin kubeconfig; run it again
and it reports the running stack. ``down`` stops exactly what ``up`` started.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from atomic_gang_devstack.bins import CONTROL_PLANE, NODE, REPO_ROOT, BinaryMissingError, Bins
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.components.incluster import NAMESPACE, RELEASE
from atomic_gang_devstack.components.node import NODE_NAME, node_images, node_net
from atomic_gang_devstack.components.simulated import nodesim_url
from atomic_gang_devstack.kubectl import KubectlError
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions, load
from atomic_gang_devstack.waits import ComponentFailedError

DEFAULT_STATE = REPO_ROOT / ".dev" / "stack"
DEFAULT_KUBECONFIG = REPO_ROOT / ".dev" / "kubeconfig"
DEFAULT_AWS_ENV = REPO_ROOT / ".dev" / "aws.env"
DEFAULT_CAPACITY = REPO_ROOT / "hack" / "devstack-capacity.yaml"
log = logging.getLogger("atomic_gang_devstack")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m atomic_gang_devstack",
        description="Local Kubernetes control plane (etcd, kube-apiserver, KCM, scheduler, kwok, "
        "the JobSet and Trainer controllers, Kueue) plus our webhook and Kueue objects, as "
        "plain processes on 127.0.0.1.",
    )
    p.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE,
        help=f"where state, certificates and logs live (default {DEFAULT_STATE})",
    )
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the stack in the background (idempotent)")
    up.add_argument(
        "--kubeconfig",
        type=Path,
        default=DEFAULT_KUBECONFIG,
        help=f"write the admin kubeconfig here (default {DEFAULT_KUBECONFIG})",
    )
    up.add_argument(
        "--fake-nodes", type=int, default=1, help="general-purpose kwok nodes to create (default 1)"
    )
    up.add_argument(
        "--provisioners", type=int, default=2, help="provisioner replicas to run (default 2)"
    )
    up.add_argument("--no-nodesim", action="store_true", help="skip the node-join simulator")
    up.add_argument(
        "--capacity",
        type=Path,
        default=DEFAULT_CAPACITY,
        help=f"simulated EC2 capacity per AZ and instance type (default {DEFAULT_CAPACITY})",
    )
    up.add_argument(
        "--boot-delay", type=float, default=2.0, help="simulated boot + join seconds (default 2)"
    )
    up.add_argument(
        "--aws-env",
        type=Path,
        default=DEFAULT_AWS_ENV,
        help=f"write the simulated EC2's AWS_* variables here (default {DEFAULT_AWS_ENV})",
    )
    up.add_argument(
        "--real-node",
        action="store_true",
        help="add one real kubelet + containerd node (needs root; restores the host on down)",
    )
    up.add_argument(
        "--in-cluster",
        action="store_true",
        help="implies --real-node: our images, cert-manager and `helm upgrade --install` of the"
        " chart run both services as pods (instead of local processes)",
    )
    up.add_argument("--no-webhook", action="store_true", help="skip our validating webhook")
    up.add_argument("--no-queues", action="store_true", help="skip the Kueue objects")
    up.add_argument(
        "--no-jobset",
        action="store_true",
        help="skip the JobSet CRD and controller (and Kueue's JobSet integration); "
        "implies --no-trainer",
    )
    up.add_argument(
        "--no-trainer",
        action="store_true",
        help="skip Kubeflow Trainer's CRDs, controller and runtimes (and Kueue's TrainJob "
        "integration)",
    )
    up.add_argument(
        "--keep-on-failure",
        action="store_true",
        help="leave started processes running when a component fails",
    )
    sub.add_parser("down", help="stop every process the stack started")
    st = sub.add_parser("status", help="report each component's health")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def _up(args: argparse.Namespace) -> int:
    in_cluster = args.in_cluster
    options = StackOptions(
        state_dir=args.state_dir.resolve(),
        kubeconfig_out=args.kubeconfig.resolve(),
        # In-cluster, the chart brings the webhook, the controller and the Kueue objects.
        webhook=not (args.no_webhook or in_cluster),
        queues=not (args.no_queues or in_cluster),
        jobset=not args.no_jobset,
        trainer=not (args.no_trainer or args.no_jobset),
        check_stand_in=args.provisioners == 0 and not in_cluster,
        fake_nodes=args.fake_nodes,
        cloud=True,
        provisioners=0 if in_cluster else args.provisioners,
        real_node=args.real_node or in_cluster,
        in_cluster=in_cluster,
        nodesim=not args.no_nodesim,
        boot_delay=args.boot_delay,
        capacity_file=args.capacity.resolve(),
        aws_env_out=args.aws_env.resolve(),
    )
    Bins.load().ensure(CONTROL_PLANE + (NODE if options.real_node else ()))
    stack = Stack(options, default_components(options))
    try:
        ctx = stack.up(keep_on_failure=args.keep_on_failure)
    except (ComponentFailedError, KubectlError) as exc:
        log.error("stack failed to start: %s", exc)
        return 1
    _report(ctx)
    return 0


def _report(ctx: Context) -> None:
    kc = ctx.options.kubeconfig_out or ctx.admin_kubeconfig()
    print(f"apiserver:  {ctx.apiserver_url}")
    print(f"kubeconfig: {kc}")
    print(f"logs:       {ctx.dir / 'logs'}")
    print(f"ready in:   {ctx.state.ready_seconds}s")
    if ctx.options.aws_env_out is not None:
        print(f"aws env:    source {ctx.options.aws_env_out}  (the simulated EC2, for aws/boto3)")
    if ctx.options.nodesim:
        print(f"nodesim:    {nodesim_url(ctx)}  (python -m atomic_gang_nodesim ctl --url … state)")
    if ctx.options.real_node:
        net = node_net(ctx)
        print(f"real node:  {NODE_NAME} at {net.node_ip} (pods {net.subnet} on {net.bridge})")
    if ctx.options.in_cluster:
        images = ", ".join(b.ref for k, b in node_images(ctx).items() if k != "pause")
        print(f"in-cluster: helm release {RELEASE} in {NAMESPACE} ({images})")
        print("            cert-manager controller + cainjector as host processes")
    print(
        f"try:        {ctx.bins.path('kubectl')} --kubeconfig {kc} get clusterqueues,localqueues -A"
    )


def _recorded_stack(state_dir: Path) -> Stack | None:
    st = load(state_dir.resolve())
    return None if st is None else Stack(st.options, default_components(st.options))


def _down(args: argparse.Namespace) -> int:
    stack = _recorded_stack(args.state_dir)
    if stack is None or not stack.down():
        print(f"nothing recorded in {args.state_dir}; nothing to stop")
    return 0


def _status(args: argparse.Namespace) -> int:
    stack = _recorded_stack(args.state_dir)
    if stack is None:
        print(json.dumps({}) if args.json else f"no stack recorded in {args.state_dir}")
        return 1
    health = stack.status()
    if args.json:
        print(json.dumps(health, indent=2))
    else:
        for name, value in health.items():
            print(f"{name:36} {value}")
    return 0 if all(v == "healthy" for v in health.values()) else 1


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s devstack %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    args = _parser().parse_args(argv)
    try:
        return {"up": _up, "down": _down, "status": _status}[args.command](args)
    except BinaryMissingError as exc:
        log.error("%s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""``python -m atomic_gang_nodesim run|ctl``: run the simulator, or turn its knobs.

``run`` prints ``{"control": "http://127.0.0.1:N"}`` once its control API is up
and runs until SIGTERM/SIGINT. AWS credentials and the endpoint come from the
standard AWS environment (``AWS_ENDPOINT_URL`` for the simulated EC2).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from atomic_gang.stopping import hold_stop_signals, wait_for_stop
from atomic_gang_fakeaws.control import ControlClient
from atomic_gang_kubelite import Kube
from atomic_gang_nodesim.control import Controls, NodeSimClient, serve
from atomic_gang_nodesim.ec2 import States, make_view
from atomic_gang_nodesim.knobs import BootDelay, DevicePlugins, DropRule, Knobs
from atomic_gang_nodesim.sim import Simulator


def _states(endpoint: str | None, region: str) -> States | None:
    """The fake layer's instance states (its control API beside its EC2 endpoint)."""
    if not endpoint:
        return None
    fake = ControlClient(endpoint)
    return lambda tags: fake.instance_states(tags=tags, region=region)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m atomic_gang_nodesim", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the simulator")
    run.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), required=False)
    run.add_argument("--endpoint", default=os.environ.get("AWS_ENDPOINT_URL"))
    run.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    run.add_argument("--cluster", required=True, help="EKS cluster the nodes join")
    run.add_argument("--boot-delay", type=float, default=2.0, help="seconds to boot and join")
    run.add_argument("--boot-jitter", type=float, default=0.0, help="up to this much more")
    run.add_argument(
        "--device-delay",
        type=float,
        default=0.0,
        help="seconds from a Node's registration to its GPUs/Neuron/EFA in allocatable",
    )
    run.add_argument(
        "--drop-join",
        type=int,
        action="append",
        default=[],
        metavar="K",
        help="the K-th managed instance discovered never joins (repeatable)",
    )
    run.add_argument("--poll-interval", type=float, default=0.5)
    run.add_argument("--control-host", default="127.0.0.1")
    run.add_argument("--control-port", type=int, default=0)
    ctl = sub.add_parser("ctl", help="talk to a running simulator's control API")
    ctl.add_argument("--url", required=True)
    ctl.add_argument(
        "verb",
        choices=[
            "state",
            "terminate",
            "not-ready",
            "ready",
            "drop-pool",
            "boot-delay",
            "device-delay",
        ],
    )
    ctl.add_argument("arg", nargs="?", default="")
    return p


def _run(args: argparse.Namespace) -> int:
    hold_stop_signals()  # before any thread starts, so every thread inherits the mask
    knobs = Knobs(
        boot=BootDelay(seconds=args.boot_delay, jitter=args.boot_jitter),
        devices=DevicePlugins(seconds=args.device_delay),
        drops=[DropRule(nth=k) for k in args.drop_join],
    )
    sim = Simulator(
        view=make_view(
            endpoint=args.endpoint,
            region=args.region,
            cluster=args.cluster,
            states=_states(args.endpoint, args.region),
        ),
        kube=Kube.from_kubeconfig(args.kubeconfig),
        region=args.region,
        knobs=knobs,
        interval=args.poll_interval,
    )
    server = serve(Controls(sim), host=args.control_host, port=args.control_port)
    host, port = server.server_address[:2]
    print(json.dumps({"control": f"http://{host!s}:{port}"}), flush=True)
    stop = threading.Event()

    def _stop_on_signal() -> None:
        wait_for_stop()
        stop.set()
        sim.wake.set()

    threading.Thread(target=_stop_on_signal, name="stop-signals", daemon=True).start()
    sim.run(stop)
    server.shutdown()
    return 0


def _ctl(args: argparse.Namespace) -> int:
    client = NodeSimClient(args.url)
    verbs: dict[str, Callable[[], Any]] = {
        "state": client.state,
        "terminate": lambda: client.terminate(args.arg),
        "not-ready": lambda: client.not_ready(args.arg),
        "ready": lambda: client.ready(args.arg),
        "drop-pool": lambda: client.drop(pool=args.arg),
        "boot-delay": lambda: client.set_boot_delay(float(args.arg)),
        "device-delay": lambda: client.set_device_delay(float(args.arg)),
    }
    out = verbs[args.verb]()
    print(json.dumps(out if out is not None else {"ok": True}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    fmt = "%(asctime)s nodesim %(levelname)s %(message)s"
    logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout)
    logging.getLogger("botocore").setLevel(logging.WARNING)
    args = _parser().parse_args(argv)
    return _run(args) if args.command == "run" else _ctl(args)


if __name__ == "__main__":
    sys.exit(main())

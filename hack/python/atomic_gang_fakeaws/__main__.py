"""``python -m atomic_gang_fakeaws serve --port N [--seed-cluster NAME --world-file F]``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import boto3

from atomic_gang_fakeaws.server import ThreadedFakeServer
from atomic_gang_fakeaws.world import seed_world


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="atomic_gang_fakeaws")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run moto plus the fidelity and fault layer")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=5000)
    serve.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-west-2"))
    serve.add_argument("--seed-cluster", help="create a VPC, subnets, EKS cluster and node role")
    serve.add_argument("--world-file", type=Path, help="write the seeded ids here as JSON")
    serve.add_argument("--no-throttling", action="store_true")
    serve.add_argument(
        "--unthrottled-caller",
        action="append",
        default=[],
        metavar="ACCESS_KEY_ID",
        help="calls signed with this key skip throttling (a simulator's IMDS-like reads)",
    )
    args = parser.parse_args(argv)
    server = ThreadedFakeServer(host=args.host, port=args.port).start()
    server.state.throttler.enabled = not args.no_throttling
    server.state.unthrottled.update(args.unthrottled_caller)
    if args.seed_cluster:
        # moto accepts any credentials; these are placeholders, not secrets.
        session = boto3.session.Session(
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106
            region_name=args.region,
        )
        world = seed_world(
            lambda name: session.client(name, endpoint_url=server.endpoint),
            region=args.region,
            cluster=args.seed_cluster,
        )
        if args.world_file:
            args.world_file.write_text(json.dumps(world.as_dict(), indent=2))
    print(json.dumps({"endpoint": server.endpoint}), flush=True)
    try:
        server._thread.join()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

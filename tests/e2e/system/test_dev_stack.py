"""The dev stack's ``aws.env`` (``.dev/aws.env`` under ``make dev-up``): sourced in a
shell with nothing else in the environment, it is all boto3 needs to reach the
simulated EC2 of the running stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atomic_gang import keys
from tests.e2e.system.conftest import unique
from tests.e2e.system.harness import System

pytestmark = pytest.mark.e2e
# Runs under `env -i`: boto3 sees only what the file exports (and an empty HOME).
DESCRIBE = """
import boto3, json, sys
ec2 = boto3.client("ec2")
out = ec2.describe_instances(Filters=[{"Name": "tag:%s", "Values": [sys.argv[1]]}])
print(json.dumps({"reservations": len(out["Reservations"]), "region": ec2.meta.region_name}))
"""


def _exports(path: Path) -> dict[str, str]:
    pairs = [ln.removeprefix("export ").split("=", 1) for ln in path.read_text().splitlines()]
    return {p[0]: p[1] for p in pairs if len(p) == 2 and not p[0].startswith("#")}


def test_aws_env_alone_reaches_the_simulated_ec2(system: System, tmp_path: Path) -> None:
    path = system.ctx.options.aws_env_out
    assert path is not None
    exports = _exports(path)
    assert exports["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
    assert exports["AWS_DEFAULT_REGION"] == "us-east-1"
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(exports)

    marker = unique("aws-env")  # only this test's call carries it
    script = f'set -a; . "{path}"; exec "{sys.executable}" -c "$0" "$1"'
    done = subprocess.run(
        ["/bin/bash", "-c", script, DESCRIBE % keys.POOL, marker],
        env={"HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"reservations": 0, "region": "us-east-1"}
    # The call reached our moto: its call log holds the request, with the marker.
    calls = [c for c in system.fake.calls("DescribeInstances") if marker in str(c["params"])]
    assert len(calls) == 1
    assert calls[0]["caller"] == exports["AWS_ACCESS_KEY_ID"]

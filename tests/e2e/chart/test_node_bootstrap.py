"""The nodeBootstrap hook's script, run for real (the AWS CLI) against the simulated AWS.

It must leave every node role able to join: the convention-named instance profile
holding the role, and an EC2_LINUX access entry, which is what the provisioner
checks before it launches. A second run changes nothing. (In the e2e tier: each AWS CLI
call starts a Python interpreter, about 40 s in all.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from atomic_gang_provisioner.cloud.naming import instance_profile_name
from tests.integration.chart.render import REQUIRED, Rendered, helm_path, merge, render
from tests.support.fakeaws_server import fakeaws_server

pytestmark = pytest.mark.e2e
REGION, CLUSTER = "us-east-1", "demo"
SECOND = "arn:aws:iam::123456789012:role/team/second"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with fakeaws_server(tmp_path_factory.mktemp("fakeaws"), region=REGION, cluster=CLUSTER) as up:
        yield up


def _client(server: dict[str, Any], name: str) -> Any:
    return boto3.client(
        name,
        region_name=REGION,
        endpoint_url=server["endpoint"],
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def _job(role: str) -> dict[str, Any]:
    values = merge(
        REQUIRED,
        {
            "clusterName": CLUSTER,
            "defaults": {"nodeRoleArn": role},
            "allowedNodeRoleArns": [role, SECOND],
            "nodeBootstrap": {"enabled": True},
        },
    )
    rendered: Rendered = render(helm_path(), values)
    assert rendered.returncode == 0, rendered.stderr
    return rendered.one("Job", "-node-bootstrap")


def _run(job: dict[str, Any], server: dict[str, Any], home: Path) -> str:
    """The container's command, with its env, plus what makes the CLI reach the fake."""
    venv_bin = str(Path(sys.executable).parent)  # the AWS CLI of the dev extras
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    env |= {
        "PATH": f"{venv_bin}:/usr/bin:/bin",
        "HOME": str(home),
        "AWS_ENDPOINT_URL": server["endpoint"],
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
    }
    assert container["command"] == ["/bin/sh", "-ec"]
    done = subprocess.run(
        ["/bin/sh", "-ec", container["args"][0]],
        env={**env, "LANG": os.environ.get("LANG", "C.UTF-8")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_hook_lets_every_node_role_join(server: dict[str, Any], tmp_path: Path) -> None:
    iam, eks = _client(server, "iam"), _client(server, "eks")
    first = server["world"]["node_role_arn"]
    eks.delete_access_entry(clusterName=CLUSTER, principalArn=first)
    trust = iam.get_role(RoleName="eks-gang-node-role")["Role"]["AssumeRolePolicyDocument"]
    iam.create_role(RoleName="second", Path="/team/", AssumeRolePolicyDocument=str(trust))
    job = _job(first)

    out = _run(job, server, tmp_path)

    assert f"created access entry for {first}" in out
    assert f"created access entry for {SECOND}" in out
    for role, name in ((first, "eks-gang-node-role"), (SECOND, "second")):
        entry = eks.describe_access_entry(clusterName=CLUSTER, principalArn=role)["accessEntry"]
        assert entry["type"] == "EC2_LINUX"
        profile = instance_profile_name(cluster=CLUSTER, node_role_arn=role)
        held = iam.get_instance_profile(InstanceProfileName=profile)["InstanceProfile"]["Roles"]
        assert [r["RoleName"] for r in held] == [name]
    assert _run(job, server, tmp_path) == ""  # idempotent: nothing left to do

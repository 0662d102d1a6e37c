"""The simulated EC2's set-up (capacity, ``aws.env``) and the node-join simulator.

``FakeAwsSetup`` gives moto its capacity per (AZ, instance type) from a small
YAML file and writes the env file with which the ``aws`` CLI or boto3 reach the
simulated EC2. ``NodeSim`` runs ``python -m atomic_gang_nodesim`` against the
stack's apiserver and the simulated EC2, with an access key of its own so the
call log tells its reads from the controller's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import yaml
from pydantic import BaseModel, ConfigDict, Field

from atomic_gang_devstack import dev_objects, waits
from atomic_gang_devstack.component import Component, Context, ProcessComponent
from atomic_gang_devstack.components.cloud import NODESIM_KEY, aws_env, fakeaws_endpoint
from atomic_gang_fakeaws.control import ControlClient


class CapacityFile(BaseModel):
    """Free slots in the simulated EC2: ``default`` for every pair not listed."""

    model_config = ConfigDict(extra="forbid")

    default: int | None = Field(default=None, ge=0, description="null = unlimited")
    zones: dict[str, dict[str, int | None]] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> CapacityFile:
        return cls.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})

    def apply(self, control: ControlClient) -> None:
        control.set_default_capacity(self.default)
        for zone, types in self.zones.items():
            for instance_type, count in types.items():
                control.set_capacity(zone, instance_type, count)


def env_file_text(env: Mapping[str, str]) -> str:
    lines = [f"export {k}={v}" for k, v in sorted(env.items())]
    return (
        "# The simulated EC2 of the dev stack: source it, then use aws or boto3.\n"
        + "\n".join(lines)
        + "\n"
    )


class FakeAwsSetup(Component):
    name = "fakeaws-setup"
    needs = ("fakeaws",)

    def start(self, ctx: Context) -> None:
        if ctx.options.capacity_file is not None:
            control = ControlClient(fakeaws_endpoint(ctx))
            try:
                CapacityFile.load(ctx.options.capacity_file).apply(control)
            finally:
                control.close()
        out = ctx.options.aws_env_out
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(env_file_text(aws_env(ctx)), encoding="utf-8")

    def stop(self, ctx: Context) -> None:
        if ctx.options.aws_env_out is not None:
            ctx.options.aws_env_out.unlink(missing_ok=True)


class NodeSim(ProcessComponent):
    name = "nodesim"
    needs: ClassVar[tuple[str, ...]] = ("kube-apiserver", "kwok", "fakeaws")
    ready_timeout = 60.0

    def argv(self, ctx: Context) -> list[str]:
        return [
            sys.executable,
            "-m",
            "atomic_gang_nodesim",
            "run",
            "--kubeconfig",
            str(ctx.admin_kubeconfig()),
            "--cluster",
            str(dev_objects.DEV_SETTINGS["clusterName"]),
            "--region",
            "us-east-1",
            "--boot-delay",
            str(ctx.options.boot_delay),
            "--boot-jitter",
            str(ctx.options.boot_jitter),
            "--control-port",
            str(ctx.port(self.name)),
        ]

    def env(self, ctx: Context) -> Mapping[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ATOMIC_GANG_"))}
        return {**base, **aws_env(ctx), "AWS_ACCESS_KEY_ID": NODESIM_KEY, "PYTHONUNBUFFERED": "1"}

    def probe(self, ctx: Context) -> bool:
        return waits.http_ok(nodesim_url(ctx) + "/healthz")


def nodesim_url(ctx: Context) -> str:
    return f"http://127.0.0.1:{ctx.port(NodeSim.name)}"

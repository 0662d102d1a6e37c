"""The launcher's options and its state file (``<state-dir>/state.json``).

The state records every port picked and every process started, written after
each step, so ``down`` can stop exactly what ``up`` started even when ``up``
died half-way. A lock file serialises launchers that share a state directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from atomic_gang_devstack.procs import ProcRecord

STATE_FILE = "state.json"


class StackOptions(BaseModel):
    """What to start, and where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state_dir: Path
    kubeconfig_out: Path | None = Field(default=None, description="Copy of the admin kubeconfig.")
    webhook: bool = Field(default=True, description="Start and register our validating webhook.")
    queues: bool = Field(default=True, description="Create the AdmissionCheck and the queues.")
    jobset: bool = Field(
        default=True,
        description="The JobSet CRD and controller, and Kueue's JobSet integration.",
    )
    trainer: bool = Field(
        default=True,
        description=(
            "Kubeflow Trainer's CRDs, controller and runtimes, and Kueue's TrainJob "
            "integration (needs jobset: the controller builds a JobSet per TrainJob)."
        ),
    )
    check_stand_in: bool = Field(
        default=True,
        description="Mark the AdmissionCheck Active ourselves, until the provisioner does it.",
    )
    fake_nodes: int = Field(default=0, ge=0, le=100, description="General-purpose kwok nodes.")
    cloud: bool = Field(default=False, description="moto + fault layer and the GangNodePool CRD.")
    provisioners: int = Field(default=0, ge=0, le=3, description="Provisioner replicas to run.")
    nodesim: bool = Field(default=False, description="Run the node-join simulator.")
    boot_delay: float = Field(default=2.0, ge=0, description="Simulated boot + join seconds.")
    boot_jitter: float = Field(default=0.0, ge=0, description="Up to this much more per node.")
    capacity_file: Path | None = Field(
        default=None, description="Free slots per (AZ, instance type) in the simulated EC2."
    )
    aws_env_out: Path | None = Field(
        default=None, description="Write the simulated EC2's AWS_* environment here."
    )
    provisioner_settings: dict[str, Any] = Field(
        default_factory=dict, description="Settings overrides for the provisioner replicas."
    )
    namespace: str = Field(default="default", description="Namespace of the dev LocalQueue.")
    real_node: bool = Field(
        default=False,
        description="Add one real kubelet + containerd node (root; see docs) beside the kwok ones.",
    )
    in_cluster: bool = Field(
        default=False,
        description="cert-manager and our chart (helm upgrade --install) on the real node.",
    )
    detach: bool = Field(
        default=True,
        description="Processes outlive the launcher (dev-up); False ties them to it (tests).",
    )
    kueue_version: str | None = Field(
        default=None,
        pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$",
        description="Run this Kueue (built and cached by version); unset: the pinned default.",
    )
    pods_ready_timeout: str = Field(
        default="5m",
        pattern=r"^[0-9]+(s|m|h)$",
        description="Kueue's waitForPodsReady timeout: an admitted gang's pods are Ready by then.",
    )
    control_plane_qps: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description=(
            "API client rate (requests a second, burst twice that) of the kube-controller-"
            "manager, the scheduler and Kueue; unset: upstream's 20/30 and 50/100, and "
            "50/100 for every Kueue version."
        ),
    )

    @model_validator(mode="after")
    def _trainer_needs_jobset(self) -> StackOptions:
        if self.trainer and not self.jobset:
            raise ValueError(
                "trainer needs jobset (the Trainer controller creates a JobSet per TrainJob);"
                " leave both out, or keep jobset"
            )
        return self


class StackState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    options: StackOptions
    ports: dict[str, int] = Field(default_factory=dict)
    procs: dict[str, ProcRecord] = Field(default_factory=dict)
    started: list[str] = Field(default_factory=list)
    ready: bool = False
    ready_seconds: float | None = None
    node_slot: int | None = None  # the real node's host slot (node/host.py), while claimed

    def save(self) -> None:
        path = self.options.state_dir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.model_dump_json(indent=2), encoding="utf-8")
        os.replace(tmp, path)


def load(state_dir: Path) -> StackState | None:
    path = state_dir / STATE_FILE
    if not path.exists():
        return None
    return StackState.model_validate_json(path.read_text(encoding="utf-8"))


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``state_dir`` (blocks while another launcher holds it)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

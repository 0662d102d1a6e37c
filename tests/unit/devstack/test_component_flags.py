"""The flags the control-plane components start with, each one the stack relies on."""

from __future__ import annotations

from pathlib import Path

import pytest

from atomic_gang_devstack import bins
from atomic_gang_devstack import kueue_manifests as km
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components.control_plane import (
    KCM_CONTROLLERS,
    SIM_KCM_CONTROLLERS,
    ControllerManager,
    Scheduler,
)
from atomic_gang_devstack.components.kueue import Kueue
from atomic_gang_devstack.state import StackOptions, StackState


@pytest.fixture
def ctx(tmp_path: Path) -> Context:
    pins = bins.parse_pins(bins.BUILD_SCRIPT.read_text(encoding="utf-8"))
    options = StackOptions(state_dir=tmp_path)
    return Context(
        options=options, state=StackState(options=options), bins=bins.Bins(tmp_path, pins)
    )


def _flag(argv: list[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
    return value


def test_kcm_runs_the_controllers_the_stack_relies_on(ctx: Context) -> None:
    argv = ControllerManager().argv(ctx)

    controllers = _flag(argv, "controllers").split(",")

    assert controllers == [*KCM_CONTROLLERS, *SIM_KCM_CONTROLLERS]  # simulated nodes
    for needed in (
        "job-controller",
        "garbage-collector-controller",
        "namespace-controller",
        "serviceaccount-controller",
        "ttl-after-finished-controller",
        "node-lifecycle-controller",  # lifts the not-ready taint once kwok reports Ready
        "taint-eviction-controller",  # a broken gang node's pods leave at once
        "pod-garbage-collector-controller",  # pods of a deleted Node are deleted
    ):
        assert needed in controllers
    assert argv[0] == str(ctx.bins.path("kube-controller-manager"))


def test_kueue_runs_with_visibility_on_demand_off(ctx: Context) -> None:
    argv = Kueue().argv(ctx)

    gates = dict(g.split("=", 1) for g in _flag(argv, "feature-gates").split(","))

    assert gates["VisibilityOnDemand"] == "false"
    assert argv[0] == str(ctx.bins.path("kueue"))


def test_upstream_client_rates_unless_the_stack_is_asked_for_more(
    ctx: Context, tmp_path: Path
) -> None:
    for argv in (ControllerManager().argv(ctx), Scheduler().argv(ctx)):
        assert not [a for a in argv if a.startswith("--kube-api-")]
    options = StackOptions(state_dir=tmp_path, control_plane_qps=200)
    fast = Context(options=options, state=StackState(options=options), bins=ctx.bins)

    for argv in (ControllerManager().argv(fast), Scheduler().argv(fast)):
        assert (_flag(argv, "kube-api-qps"), _flag(argv, "kube-api-burst")) == ("200", "400")
    assert km.manager_config(health_port=1, webhook_port=2, cert_dir=tmp_path, qps=200)[
        "clientConnection"
    ] == {"qps": 200, "burst": 400}

"""A Node counts as Ready for the gang only when pods can land on it: Ready, not being
deleted, and without the taints Kubernetes keeps on a node until it can take pods."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.nodes import node_read_changed, node_view


def node(*taints: tuple[str, str], ready: str = "True") -> dict[str, Any]:
    return {
        "metadata": {"name": "ip-10-0-0-1", "labels": {keys.POOL: "p", keys.GROUP: "g"}},
        "spec": {
            "providerID": "aws:///us-east-1a/i-0abc",
            "taints": [{"key": k, "effect": e} for k, e in taints],
        },
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


@pytest.mark.parametrize(
    "taint",
    [
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/network-unavailable", "NoSchedule"),
        ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
    ],
)
def test_a_ready_node_still_tainted_not_ready_is_not_ready_for_the_gang(
    taint: tuple[str, str],
) -> None:
    view = node_view(node(taint))
    assert view is not None
    assert not view.ready


@pytest.mark.parametrize(
    "taint",
    [
        ("atomic-gang.k8s.aws/gang", "NoSchedule"),  # ours: the gang's pods tolerate it
        ("node.kubernetes.io/unschedulable", "NoSchedule"),  # a cordon leaves pods be
        ("node.kubernetes.io/not-ready", "PreferNoSchedule"),  # keeps no pod off
    ],
)
def test_other_taints_leave_a_ready_node_ready(taint: tuple[str, str]) -> None:
    view = node_view(node(taint))
    assert view is not None
    assert view.ready


def test_the_not_ready_taint_going_is_a_change_the_pool_reads() -> None:
    tainted = node(("node.kubernetes.io/not-ready", "NoSchedule"))
    assert node_read_changed(tainted, node())
    assert not node_read_changed(node(), node())


def test_a_node_reads_the_extended_resources_in_its_allocatable() -> None:
    n = node()
    n["status"]["allocatable"] = {"cpu": "96", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"}
    view = node_view(n)
    assert view is not None
    assert view.devices == (("nvidia.com/gpu", 8), ("vpc.amazonaws.com/efa", 4))
    assert view.holds({"nvidia.com/gpu": 8})
    assert not view.holds({"nvidia.com/gpu": 8, "aws.amazon.com/neuron": 1})
    assert not view.holds({"vpc.amazonaws.com/efa": 5})


def test_the_device_plugin_registering_is_a_change_the_pool_reads() -> None:
    advertised = node()
    advertised["status"]["allocatable"] = {"nvidia.com/gpu": "8"}
    assert node_read_changed(node(), advertised)

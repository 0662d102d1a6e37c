"""A Node counts as Ready for the gang only when pods can land on it: Ready, not being
deleted, and without the taints Kubernetes keeps on a node until it can take pods. What
the Node cache keeps of a Node (``slim_node``) reads the same."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang import keys
from atomic_gang_provisioner.nodes import node_read_changed, node_ready, node_view, slim_node


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


LABELS = st.dictionaries(
    st.sampled_from(
        [
            keys.POOL,
            keys.GROUP,
            keys.GENERATION,
            "kubernetes.io/hostname",
            "topology.k8s.aws/network-node-layer-1",
            "topology.k8s.aws/network-node-layer-3",
        ]
    ),
    st.sampled_from(["p", "g", "nn-1"]),
)
TAINTS = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(
                ["node.kubernetes.io/not-ready", keys.GANG_TAINT, "node.kubernetes.io/unreachable"]
            ),
            "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
        }
    ),
    max_size=3,
)
CONDITIONS = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["Ready", "MemoryPressure", "DiskPressure"]),
            "status": st.sampled_from(["True", "False", "Unknown"]),
            "lastHeartbeatTime": st.sampled_from(["T1", "T2"]),
            "lastTransitionTime": st.sampled_from(["2026-12-01T10:00:00Z", "2026-12-01T10:01:00Z"]),
        }
    ),
    max_size=3,
)
ALLOCATABLE = st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "vpc.amazonaws.com/efa", "pods"]),
    st.sampled_from(["8", "0", "1Ti", "110", "x"]),
)


@st.composite
def nodes(draw: st.DrawFn) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "ip-10-0-0-1",
        "resourceVersion": "7",
        "labels": draw(LABELS),
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        "managedFields": [{"manager": "kubelet"}],
    }
    if draw(st.booleans()):
        meta["deletionTimestamp"] = "2026-12-01T11:00:00Z"
    return {
        "metadata": meta,
        "spec": {
            "providerID": draw(st.sampled_from(["aws:///us-east-1a/i-0abc", "kind://x", ""])),
            "taints": draw(TAINTS),
        },
        "status": {
            "conditions": draw(CONDITIONS),
            "allocatable": draw(ALLOCATABLE),
            "capacity": {"cpu": "96"},
            "images": [{"names": ["registry.example.com/i:v1"], "sizeBytes": 1}],
        },
    }


@given(nodes())
def test_the_cache_reads_a_node_as_the_whole_one_reads(node: dict[str, Any]) -> None:
    kept = slim_node(node)
    assert node_view(kept) == node_view(node)
    assert not node_read_changed(kept, node)
    assert slim_node(kept) == kept
    assert "managedFields" not in kept["metadata"]
    assert "images" not in kept["status"]


@given(nodes(), nodes())
def test_a_node_update_wakes_a_pool_from_the_slim_copies_as_from_the_whole_ones(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    assert node_read_changed(slim_node(a), slim_node(b)) == node_read_changed(a, b)


@given(nodes())
def test_the_join_checks_readiness_is_the_views(node: dict[str, Any]) -> None:
    view = node_view(node)
    assert node_ready(node) == (view is not None and view.ready)
    assert node_ready(slim_node(node)) == node_ready(node)

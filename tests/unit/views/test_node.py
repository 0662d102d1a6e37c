"""The Node view: providerID, taints, the Ready condition, allocatable and our labels,
on a whole Node and on one the kubelet or the cloud has not filled in yet."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.views.node import Node

NODE: dict[str, Any] = {
    "metadata": {"name": "ip-10-0-0-1", "labels": {keys.POOL: "p", keys.GROUP: "g"}},
    "spec": {
        "providerID": "aws:///us-east-1a/i-0abc",
        "taints": [{"key": keys.GANG_TAINT, "effect": "NoSchedule"}],
    },
    "status": {
        "conditions": [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"},
            {"type": "Ready", "status": "False"},
        ],
        "allocatable": {"cpu": "96", "nvidia.com/gpu": "8"},
    },
}


def test_reads_a_whole_node() -> None:
    node = Node(NODE)
    assert node.name == "ip-10-0-0-1"
    assert node.provider_id == "aws:///us-east-1a/i-0abc"
    assert node.taints == [{"key": keys.GANG_TAINT, "effect": "NoSchedule"}]
    assert len(node.conditions) == 3
    assert node.allocatable == {"cpu": "96", "nvidia.com/gpu": "8"}
    assert (node.pool, node.group) == ("p", "g")


def test_the_ready_condition_is_the_first_of_its_type() -> None:
    ready = Node(NODE).ready_condition
    assert ready is not None
    assert ready["status"] == "True"


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"metadata": None, "spec": None, "status": None},
        {"spec": {"providerID": "", "taints": None}, "status": {"conditions": None}},
        {"metadata": {"labels": None}, "status": {"allocatable": None}},
    ],
    ids=["bare", "null-sections", "null-lists", "null-maps"],
)
def test_a_node_not_filled_in_reads_as_nothing(raw: dict[str, Any]) -> None:
    node = Node(raw)
    assert node.provider_id == ""
    assert list(node.taints) == []
    assert list(node.conditions) == []
    assert node.ready_condition is None
    assert node.allocatable == {}
    assert node.pool is None
    assert node.group is None


def test_no_ready_condition_among_others() -> None:
    node = Node({"status": {"conditions": [{"type": "DiskPressure", "status": "False"}]}})
    assert node.ready_condition is None


def test_a_node_of_no_pool() -> None:
    node = Node({"metadata": {"labels": {"kubernetes.io/hostname": "x"}}})
    assert node.pool is None
    assert node.labels == {"kubernetes.io/hostname": "x"}

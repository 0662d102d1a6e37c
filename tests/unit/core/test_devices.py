"""What one pod asks of a Node in extended resources: the amount a device plugin must
advertise before the pod can land (Kubernetes' effective request)."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang.devices import extended_requests, is_extended, whole_quantity


def container(name: str = "c", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "image": "x", "resources": resources}


@pytest.mark.parametrize(
    ("text", "amount"),
    [("8", 8), ("0", 0), ("1k", 1000), ("2Ki", 2048), (" 4 ", 4), (8, 8)],
)
def test_whole_quantities_parse(text: object, amount: int) -> None:
    assert whole_quantity(text) == amount


@pytest.mark.parametrize("text", ["1.5", "500m", "", "eight", "-1", "1e3"])
def test_anything_else_is_not_a_whole_quantity(text: str) -> None:
    assert whole_quantity(text) is None


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("nvidia.com/gpu", True),
        ("vpc.amazonaws.com/efa", True),
        ("aws.amazon.com/neuron", True),
        ("cpu", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/batch-cpu", False),
        ("requests.nvidia.com/gpu", False),
    ],
)
def test_extended_names_are_domain_prefixed_outside_kubernetes(name: str, extended: bool) -> None:
    assert is_extended(name) is extended


def test_a_limit_alone_is_the_request_and_containers_add_up() -> None:
    pod = {
        "containers": [
            container(limits={"nvidia.com/gpu": "4", "cpu": "8"}),
            container("b", requests={"nvidia.com/gpu": "4"}, limits={"nvidia.com/gpu": "4"}),
            container("c", limits={"vpc.amazonaws.com/efa": "4"}),
        ]
    }
    assert extended_requests(pod) == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4}


def test_an_init_container_counts_when_it_asks_more_and_a_sidecar_adds() -> None:
    pod = {
        "initContainers": [
            container("warmup", limits={"nvidia.com/gpu": "8"}),
            {
                **container("agent", limits={"vpc.amazonaws.com/efa": "1"}),
                "restartPolicy": "Always",
            },
        ],
        "containers": [container(limits={"nvidia.com/gpu": "2", "vpc.amazonaws.com/efa": "3"})],
    }
    assert extended_requests(pod) == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4}


def test_a_pod_without_devices_or_at_zero_asks_nothing() -> None:
    assert extended_requests({"containers": [container(limits={"cpu": "2"})]}) == {}
    assert extended_requests({"containers": [container(limits={"nvidia.com/gpu": "0"})]}) == {}
    assert extended_requests({"containers": [container()]}) == {}

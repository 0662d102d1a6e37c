"""Node capacity from DescribeInstanceTypes entries (as moto reports them)."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_nodesim.capacity import architecture, capacity, max_pods


def _type(
    name: str,
    vcpus: int,
    mib: int,
    *,
    enis: int,
    ips: int,
    gpus: int = 0,
    neuron: int = 0,
    disk: int | None = None,
    arch: str = "x86_64",
) -> dict[str, Any]:
    info: dict[str, Any] = {
        "InstanceType": name,
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": mib},
        "NetworkInfo": {"MaximumNetworkInterfaces": enis, "Ipv4AddressesPerInterface": ips},
        "ProcessorInfo": {"SupportedArchitectures": [arch]},
    }
    if gpus:
        info["GpuInfo"] = {"Gpus": [{"Name": "A100", "Manufacturer": "NVIDIA", "Count": gpus}]}
    if neuron:
        info["NeuronInfo"] = {"NeuronDevices": [{"Count": neuron, "Name": "Trainium"}]}
    if disk:
        info["InstanceStorageInfo"] = {"TotalSizeInGB": disk}
    return info


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        pytest.param(
            _type("p4d.24xlarge", 96, 1179648, enis=60, ips=50, gpus=8, disk=8000),
            {
                "cpu": "96",
                "memory": "1207959552Ki",
                "ephemeral-storage": "8000Gi",
                "pods": "250",
                "nvidia.com/gpu": "8",
            },
            id="p4d-8-gpus",
        ),
        pytest.param(
            _type("g6.xlarge", 4, 16384, enis=4, ips=15, gpus=1, disk=250),
            {
                "cpu": "4",
                "memory": "16777216Ki",
                "ephemeral-storage": "250Gi",
                "pods": "58",
                "nvidia.com/gpu": "1",
            },
            id="g6-one-gpu",
        ),
        pytest.param(
            _type("m5.large", 2, 8192, enis=3, ips=10),
            {"cpu": "2", "memory": "8388608Ki", "ephemeral-storage": "80Gi", "pods": "29"},
            id="m5-no-gpu",
        ),
        pytest.param(
            _type("trn1.32xlarge", 128, 524288, enis=40, ips=50, neuron=16, disk=7600),
            {
                "cpu": "128",
                "memory": "536870912Ki",
                "ephemeral-storage": "7600Gi",
                "pods": "250",
                "aws.amazon.com/neuron": "16",
            },
            id="trn1-neuron",
        ),
    ],
)
def test_capacity(info: dict[str, Any], expected: dict[str, str]) -> None:
    assert capacity(info) == expected


def test_gpus_only_for_gpu_families() -> None:
    odd = _type("x9.large", 2, 1024, enis=2, ips=4, gpus=2)
    assert "nvidia.com/gpu" not in capacity(odd)


def test_max_pods_caps() -> None:
    assert max_pods(vcpus=8, enis=8, ips_per_eni=30) == 110
    assert max_pods(vcpus=64, enis=15, ips_per_eni=50) == 250
    assert max_pods(vcpus=2, enis=0, ips_per_eni=0) == 110


def test_architecture() -> None:
    assert architecture(_type("m7g.large", 2, 8192, enis=3, ips=10, arch="arm64")) == "arm64"
    assert architecture({}) == "amd64"

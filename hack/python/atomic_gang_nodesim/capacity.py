"""Node capacity from an EC2 ``DescribeInstanceTypes`` entry.

Pure. CPU and memory as kubelet reports them; ``nvidia.com/gpu`` for the
GPU families (the NVIDIA device plugin's resource),
``aws.amazon.com/neuron`` for Trainium/Inferentia (the Neuron device plugin's) and
``vpc.amazonaws.com/efa`` for the instance's EFA interfaces (the EFA plugin's);
``pods`` by the EKS max-pods formula for the VPC CNI,
``ENIs × (IPv4 per ENI − 1) + 2``, capped at 110 below 30 vCPUs and 250 above,
as EKS AL2023 nodes do. Allocatable subtracts nothing: a simulator has no
system daemons to reserve for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from atomic_gang.devices import is_extended

GPU: Final = "nvidia.com/gpu"
NEURON: Final = "aws.amazon.com/neuron"
EFA: Final = "vpc.amazonaws.com/efa"
GPU_FAMILIES: Final = ("p", "g")
ARCH: Final = {"x86_64": "amd64", "arm64": "arm64", "i386": "386"}
DEFAULT_DISK_GIB: Final = 80  # the root volume when the type has no instance store


def family(instance_type: str) -> str:
    """``p4d.24xlarge`` → ``p4d``."""
    return instance_type.split(".", 1)[0]


def is_gpu_family(instance_type: str) -> bool:
    fam = family(instance_type)
    return fam[:1] in GPU_FAMILIES and not fam.startswith("gr")


def max_pods(*, vcpus: int, enis: int, ips_per_eni: int) -> int:
    formula = enis * (ips_per_eni - 1) + 2 if enis and ips_per_eni else 110
    return max(1, min(formula, 110 if vcpus < 30 else 250))


def _gpus(info: Mapping[str, Any]) -> int:
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    return sum(int(g.get("Count", 0)) for g in gpus if g.get("Manufacturer") == "NVIDIA")


def _neuron(info: Mapping[str, Any]) -> int:
    devices = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
    return sum(int(d.get("Count", 0)) for d in devices)


def capacity(info: Mapping[str, Any], *, efa_interfaces: int = 0) -> dict[str, str]:
    """The Node's ``status.capacity`` for one instance type with that many EFAs attached."""
    name = str(info.get("InstanceType", ""))
    vcpus = int((info.get("VCpuInfo") or {}).get("DefaultVCpus", 2))
    net = info.get("NetworkInfo") or {}
    disk = int((info.get("InstanceStorageInfo") or {}).get("TotalSizeInGB") or DEFAULT_DISK_GIB)
    out = {
        "cpu": str(vcpus),
        "memory": f"{int((info.get('MemoryInfo') or {}).get('SizeInMiB', 1024)) * 1024}Ki",
        "ephemeral-storage": f"{disk}Gi",
        "pods": str(
            max_pods(
                vcpus=vcpus,
                enis=int(net.get("MaximumNetworkInterfaces", 0)),
                ips_per_eni=int(net.get("Ipv4AddressesPerInterface", 0)),
            )
        ),
    }
    if is_gpu_family(name) and (gpus := _gpus(info)):
        out[GPU] = str(gpus)
    if neuron := _neuron(info):
        out[NEURON] = str(neuron)
    if efa_interfaces:
        out[EFA] = str(efa_interfaces)
    return out


def devices(resources: Mapping[str, str]) -> dict[str, str]:
    """The resources a device plugin advertises (extended ones), not kubelet itself."""
    return {name: qty for name, qty in resources.items() if is_extended(name)}


def architecture(info: Mapping[str, Any]) -> str:
    """Kubernetes' ``kubernetes.io/arch`` for the type's first supported architecture."""
    archs = (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ["x86_64"]
    return ARCH.get(str(archs[0]), str(archs[0]))

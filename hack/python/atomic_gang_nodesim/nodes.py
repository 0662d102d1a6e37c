"""The Node a simulated instance registers, and the instance as the simulator sees it.

Pure. Names are EKS's (``ip-10-0-1-23.ec2.internal`` in us-east-1,
``ip-….<region>.compute.internal`` elsewhere), the providerID is
``aws:///<az>/<instance-id>`` as the AWS cloud provider writes it, labels are
kubelet's well-known ones plus ``--node-labels``, taints come from
``--register-with-taints``. The ``kwok.x-k8s.io/node=fake`` annotation hands the
Node to kwok, which plays its kubelet and makes it Ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from atomic_gang_nodesim.knobs import AgentCondition
from atomic_gang_nodesim.nodeconfig import JoinSpec

KWOK_ANNOTATION: Final = "kwok.x-k8s.io/node"
KWOK_MANAGED: Final = "fake"
KWOK_PAUSED: Final = "nodesim-not-ready"  # kwok leaves a Node alone once this is set
SIM_ANNOTATION: Final = "nodesim.atomic-gang.k8s.aws/instance-id"
MANAGED_TAG: Final = "atomic-gang.k8s.aws/managed"
CLUSTER_TAG: Final = "atomic-gang.k8s.aws/cluster"
POOL_TAG: Final = "atomic-gang.k8s.aws/pool"


@dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """One managed EC2 instance from DescribeInstances."""

    instance_id: str
    instance_type: str
    zone: str
    state: str
    private_ip: str = ""
    private_dns: str = ""
    profile_arn: str = ""
    efa_interfaces: int = 0
    tags: Mapping[str, str]

    @property
    def pool(self) -> str:
        return self.tags.get(POOL_TAG, "")

    @classmethod
    def from_describe(cls, raw: Mapping[str, Any]) -> Instance:
        return cls(
            instance_id=str(raw["InstanceId"]),
            instance_type=str(raw.get("InstanceType", "")),
            zone=str((raw.get("Placement") or {}).get("AvailabilityZone", "")),
            state=str((raw.get("State") or {}).get("Name", "")),
            private_ip=str(raw.get("PrivateIpAddress") or ""),
            private_dns=str(raw.get("PrivateDnsName") or ""),
            profile_arn=str((raw.get("IamInstanceProfile") or {}).get("Arn") or ""),
            efa_interfaces=sum(
                n.get("InterfaceType") in ("efa", "efa-only")
                for n in raw.get("NetworkInterfaces") or []
            ),
            tags={t["Key"]: t["Value"] for t in raw.get("Tags") or []},
        )


def node_name(*, private_dns: str, private_ip: str, region: str) -> str:
    """The hostname kubelet registers with on EKS (the instance's private DNS name)."""
    if private_dns:
        return private_dns
    if not private_ip:
        raise ValueError("an instance without a private IP cannot register")
    domain = "ec2.internal" if region == "us-east-1" else f"{region}.compute.internal"
    return f"ip-{private_ip.replace('.', '-')}.{domain}"


def provider_id(*, zone: str, instance_id: str) -> str:
    return f"aws:///{zone}/{instance_id}"


def _labels(inst: Instance, join: JoinSpec, *, name: str, arch: str, region: str) -> dict[str, str]:
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "node.kubernetes.io/instance-type": inst.instance_type,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": inst.zone,
        "type": "kwok",
        **join.labels,
    }


def build_node(
    inst: Instance,
    join: JoinSpec,
    *,
    resources: Mapping[str, str],
    arch: str,
    region: str,
) -> dict[str, Any]:
    """The Node object kubelet would create for ``inst`` after nodeadm ran ``join``."""
    name = node_name(private_dns=inst.private_dns, private_ip=inst.private_ip, region=region)
    addresses = [{"type": "Hostname", "address": name}, {"type": "InternalDNS", "address": name}]
    if inst.private_ip:
        addresses.insert(0, {"type": "InternalIP", "address": inst.private_ip})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": _labels(inst, join, name=name, arch=arch, region=region),
            "annotations": {KWOK_ANNOTATION: KWOK_MANAGED, SIM_ANNOTATION: inst.instance_id},
        },
        "spec": {
            "providerID": provider_id(zone=inst.zone, instance_id=inst.instance_id),
            "taints": [t.to_dict() for t in join.taints],
        },
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "addresses": addresses,
            "nodeInfo": {"architecture": arch, "operatingSystem": "linux"},
        },
    }


def agent_condition(cond: AgentCondition) -> dict[str, Any]:
    """The Node condition a node monitoring agent writes for ``cond``."""
    return {
        "type": cond.type,
        "status": cond.status,
        "reason": cond.reason,
        "message": cond.message,
        "lastHeartbeatTime": cond.since,
        "lastTransitionTime": cond.since,
    }


def not_ready_condition(now: str) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "node-join simulator: marked NotReady",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }

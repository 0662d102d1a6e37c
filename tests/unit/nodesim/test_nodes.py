"""The Node a simulated instance registers: EKS name, providerID, labels, taints."""

from __future__ import annotations

import pytest

from atomic_gang_nodesim.kubelet import Taint
from atomic_gang_nodesim.nodeconfig import JoinSpec
from atomic_gang_nodesim.nodes import Instance, build_node, node_name

RAW = {
    "InstanceId": "i-0abc",
    "InstanceType": "p4d.24xlarge",
    "Placement": {"AvailabilityZone": "us-east-1a"},
    "State": {"Name": "running"},
    "PrivateIpAddress": "10.0.1.23",
    "PrivateDnsName": "ip-10-0-1-23.ec2.internal",
    "Tags": [{"Key": "atomic-gang.k8s.aws/pool", "Value": "train"}],
}
JOIN = JoinSpec(
    cluster="dev",
    endpoint="https://x.eks.amazonaws.com",
    certificate_authority="Q0E=",
    cidr="172.20.0.0/16",
    labels={"atomic-gang.k8s.aws/pool": "train"},
    taints=(Taint("atomic-gang.k8s.aws/gang", "train", "NoSchedule"),),
)


@pytest.mark.parametrize(
    ("dns", "ip", "region", "expected"),
    [
        pytest.param(
            "ip-10-0-1-23.ec2.internal",
            "10.0.1.23",
            "us-east-1",
            "ip-10-0-1-23.ec2.internal",
            id="dns",
        ),
        pytest.param("", "10.0.1.23", "us-east-1", "ip-10-0-1-23.ec2.internal", id="us-east-1"),
        pytest.param(
            "", "10.2.3.4", "eu-west-1", "ip-10-2-3-4.eu-west-1.compute.internal", id="other"
        ),
    ],
)
def test_node_name(dns: str, ip: str, region: str, expected: str) -> None:
    assert node_name(private_dns=dns, private_ip=ip, region=region) == expected


def test_no_address_no_name() -> None:
    with pytest.raises(ValueError, match="private IP"):
        node_name(private_dns="", private_ip="", region="us-east-1")


def test_build_node() -> None:
    inst = Instance.from_describe(RAW)
    assert inst.pool == "train"
    node = build_node(inst, JOIN, resources={"cpu": "96"}, arch="amd64", region="us-east-1")
    meta = node["metadata"]
    assert meta["name"] == "ip-10-0-1-23.ec2.internal"
    assert meta["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert meta["labels"]["atomic-gang.k8s.aws/pool"] == "train"
    assert meta["labels"]["topology.kubernetes.io/zone"] == "us-east-1a"
    assert meta["labels"]["node.kubernetes.io/instance-type"] == "p4d.24xlarge"
    assert node["spec"] == {
        "providerID": "aws:///us-east-1a/i-0abc",
        "taints": [{"key": "atomic-gang.k8s.aws/gang", "value": "train", "effect": "NoSchedule"}],
    }
    assert node["status"]["capacity"] == node["status"]["allocatable"] == {"cpu": "96"}
    assert {"type": "InternalIP", "address": "10.0.1.23"} in node["status"]["addresses"]

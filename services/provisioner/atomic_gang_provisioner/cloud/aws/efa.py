"""EFA: how many interfaces, their layout, and the prerequisites, checked before a launch.

* The count: ``efa: "true"`` is the type's ``EfaInfo.MaximumEfaInterfaces``; a
  number is that many. Either needs ``EfaSupported`` and at most the maximum.
* The layout (AWS's recommendation, what Karpenter and ParallelCluster build):
  the primary on card 0 device 0 as ``efa``, one more ``efa`` on device 1 of
  each further card. Subnet and security groups go inside the interfaces: EC2
  refuses them at the top level of a request (or template) with interfaces.
* The security group must allow all traffic to and from itself, both ways (as
  ParallelCluster's validator checks); we say which rule is missing and never
  change the group ourselves.
"""

from __future__ import annotations

from typing import Any

from atomic_gang import GangSpec
from atomic_gang_provisioner.cloud.aws.instance_types import TypeInfo
from atomic_gang_provisioner.cloud.error_codes import CloudError


def interface_count(spec: GangSpec, info: TypeInfo) -> int:
    """EFA interfaces per instance (0: none); CloudError EfaNotSupported if impossible."""
    if spec.efa is None:
        return 0
    if not info.efa_supported or info.max_efa_interfaces < 1:
        raise CloudError(
            "EfaNotSupported",
            f"instance type {spec.instance_type} does not support EFA (EfaSupported is"
            " false in DescribeInstanceTypes: its limit is 0 EFA interfaces)",
        )
    if spec.efa == "max":
        return info.max_efa_interfaces
    if spec.efa > info.max_efa_interfaces:
        raise CloudError(
            "EfaNotSupported",
            f"efa asks for {spec.efa} interfaces; {spec.instance_type} supports at most"
            f" {info.max_efa_interfaces} (EfaInfo.MaximumEfaInterfaces)",
        )
    return spec.efa


def interfaces(
    count: int, *, security_groups: list[str], subnet_id: str | None = None
) -> list[dict[str, Any]]:
    """``count`` EFA interfaces, one per network card; the subnet only in a request."""
    return [
        {
            "NetworkCardIndex": card,
            "DeviceIndex": 0 if card == 0 else 1,
            "InterfaceType": "efa",
            "Groups": list(security_groups),
            "DeleteOnTermination": True,
            **({"SubnetId": subnet_id} if subnet_id else {}),
        }
        for card in range(count)
    ]


def _allows_self(group_id: str, rules: list[dict[str, Any]]) -> bool:
    return any(
        rule.get("IpProtocol") == "-1"
        and any(pair.get("GroupId") == group_id for pair in rule.get("UserIdGroupPairs") or [])
        for rule in rules
    )


def missing_self_rules(group: dict[str, Any]) -> list[str]:
    """The rules EFA needs that the group lacks, each as the command that adds it."""
    gid = str(group.get("GroupId", ""))
    missing = []
    if not _allows_self(gid, group.get("IpPermissions") or []):
        missing.append(
            f"inbound all traffic from itself (aws ec2 authorize-security-group-ingress"
            f" --group-id {gid} --protocol -1 --source-group {gid})"
        )
    if not _allows_self(gid, group.get("IpPermissionsEgress") or []):
        pairs = f"UserIdGroupPairs=[{{GroupId={gid}}}]"
        missing.append(
            f"outbound all traffic to itself (aws ec2 authorize-security-group-egress"
            f" --group-id {gid} --ip-permissions 'IpProtocol=-1,{pairs}')"
        )
    return missing


def check_security_group(ec2: Any, call: Any, group_id: str) -> None:
    """CloudError EfaSecurityGroup unless ``group_id`` allows itself both ways."""
    if not group_id:
        raise CloudError(
            "EfaSecurityGroup",
            "the cluster reports no security group for its nodes; EFA needs one that allows"
            " all traffic to and from itself",
        )
    found = call(ec2, "describe_security_groups", GroupIds=[group_id])["SecurityGroups"]
    missing = missing_self_rules(found[0]) if found else ["the group itself (not found)"]
    if missing:
        raise CloudError(
            "EfaSecurityGroup",
            f"EFA needs security group {group_id} to allow all traffic to and from itself;"
            " it lacks " + "; and ".join(missing),
        )

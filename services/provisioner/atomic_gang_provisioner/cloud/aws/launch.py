"""The two N-or-0 primitives and the checks around them.

``runinstances``: MinCount == MaxCount == N into one subnet, AZs swept in
order, a capacity error moves on to the next AZ. ``fleet``: one instant
CreateFleet with MinTargetCapacity = N over every placement. Either way the
answer must be exactly N distinct live ids; anything else is terminated at
once (fleet deleted too) and reported as a shortfall. A placement group goes into
the request (RunInstances) or each fleet override; EFA interfaces carry the
subnet (in the request) and the security group, which then leave the top level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from atomic_gang import GangSpec
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.aws import efa, parse
from atomic_gang_provisioner.cloud.aws.cluster import Placement
from atomic_gang_provisioner.cloud.aws.templates import TemplateRef
from atomic_gang_provisioner.cloud.reservation_fit import Reservation
from atomic_gang_provisioner.cloud.turns.short_cells import Cell
from atomic_gang_provisioner.cloud.values import Instance, UnknownLaunch

TAGGED = ("instance", "volume", "network-interface")


@dataclass(frozen=True, slots=True)
class LaunchNetwork:
    """The gang's place in the network: its placement group, and its EFA interfaces per
    instance with the security group they carry."""

    placement_group: str | None = None
    efa_interfaces: int = 0
    security_group: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchPlan:
    """Everything resolved for one acquisition attempt."""

    spec: GangSpec
    generation: int
    template: TemplateRef
    base_data: dict[str, Any]
    placements: tuple[Placement, ...]
    user_data: str
    tags: dict[str, str]
    reservation: Reservation | None = None
    network: LaunchNetwork = LaunchNetwork()
    replay: UnknownLaunch | None = None  # sent first: see AcquireRequest.replay
    group: str | None = None  # a repair's: the gang's group label (RepairLaunch.group)


def base_template_data(
    *, spec: GangSpec, ami: str, profile: str, security_group: str, efa_interfaces: int = 0
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "ImageId": ami,
        "InstanceType": spec.instance_type,
        "IamInstanceProfile": {"Name": profile},
        "MetadataOptions": {
            "HttpTokens": "required",
            "HttpPutResponseHopLimit": 2,
            "HttpEndpoint": "enabled",
        },
    }
    groups = [security_group] if security_group else []
    if efa_interfaces:  # no subnet: the request or the fleet override brings it
        data["NetworkInterfaces"] = efa.interfaces(efa_interfaces, security_groups=groups)
    elif groups:
        data["SecurityGroupIds"] = groups
    return data


def _network(plan: LaunchPlan, placement: Placement) -> dict[str, Any]:
    """Where the instances go: the subnet, alone or inside the EFA interfaces; the group."""
    net, out = plan.network, dict[str, Any]()
    if net.efa_interfaces:
        groups = [net.security_group] if net.security_group else []
        out["NetworkInterfaces"] = efa.interfaces(
            net.efa_interfaces, security_groups=groups, subnet_id=placement.subnet_id
        )
    else:
        out["SubnetId"] = placement.subnet_id
    if net.placement_group:
        out["Placement"] = {"GroupName": net.placement_group}
    return out


def reservation_fields(res: Reservation | None) -> dict[str, Any]:
    """ODCR: capacity-reservations-only plus the target; a Capacity Block adds its market."""
    if res is None:
        return {}
    out: dict[str, Any] = {
        "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": res.reservation_id},
        }
    }
    if res.capacity_block:
        out["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    return out


def run_instances_params(plan: LaunchPlan, placement: Placement, token: str) -> dict[str, Any]:
    return {
        "LaunchTemplate": {
            "LaunchTemplateId": plan.template.template_id,
            "Version": str(plan.template.version),
        },
        "MinCount": plan.spec.count,
        "MaxCount": plan.spec.count,
        **_network(plan, placement),
        "ClientToken": token,
        "UserData": plan.user_data,
        "TagSpecifications": parse.tag_specs(TAGGED, plan.tags),
        **reservation_fields(plan.reservation),
    }


def fleet_template_data(plan: LaunchPlan, user_data_b64: str) -> dict[str, Any]:
    """Per-generation version: user data and volume/ENI tags cannot go in CreateFleet."""
    return {
        **plan.base_data,
        "UserData": user_data_b64,
        "TagSpecifications": parse.tag_specs(("volume", "network-interface"), plan.tags),
        **reservation_fields(plan.reservation),
    }


def fleet_params(plan: LaunchPlan, *, version: int, token: str) -> dict[str, Any]:
    n = plan.spec.count
    name = plan.network.placement_group
    group = {"Placement": {"GroupName": name}} if name else {}
    overrides = [
        {"SubnetId": p.subnet_id, "InstanceType": plan.spec.instance_type, **group}
        for p in plan.placements
    ]
    return {
        "Type": "instant",
        "ClientToken": token,
        "TargetCapacitySpecification": _target(plan),
        "OnDemandOptions": {"MinTargetCapacity": n, "SingleInstanceType": True},
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateId": plan.template.template_id,
                    "Version": str(version),
                },
                "Overrides": overrides,
            }
        ],
        "TagSpecifications": parse.tag_specs(("instance", "fleet"), plan.tags),
    }


def _target(plan: LaunchPlan) -> dict[str, Any]:
    """On-demand, or a Capacity Block (which EC2 Fleet takes as its own capacity type)."""
    n = plan.spec.count
    if plan.reservation is not None and plan.reservation.capacity_block:
        return {"TotalTargetCapacity": n, "DefaultTargetCapacityType": "capacity-block"}
    return {
        "TotalTargetCapacity": n,
        "OnDemandTargetCapacity": n,
        "DefaultTargetCapacityType": "on-demand",
    }


def fleet_instance_ids(response: dict[str, Any]) -> list[str]:
    return [i for group in response.get("Instances", []) for i in group.get("InstanceIds", [])]


def exactly_n(instances: list[Instance], n: int) -> bool:
    """The validation every launch answer must pass: N distinct, live ids."""
    ids = {i.instance_id for i in instances}
    return len(instances) == n and len(ids) == n and all(i.live for i in instances)


def token_for(plan: LaunchPlan, zone: str) -> str:
    rid = plan.reservation.reservation_id if plan.reservation else ""
    return naming.client_token(
        pool=plan.spec.pool, generation=plan.generation, zone=zone, reservation=rid
    )


def cell_of(plan: LaunchPlan, zone: str) -> Cell:
    """The capacity cell a launch of ``plan`` into ``zone`` draws from."""
    reservation = plan.reservation.reservation_id if plan.reservation is not None else ""
    group = plan.network.placement_group or ""
    return Cell(plan.spec.instance_type, zone, reservation, group)

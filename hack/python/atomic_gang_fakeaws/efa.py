"""Network interfaces at launch as EC2 treats them, EFA included (moto ignores both).

* Validation, with EC2's error codes: interfaces together with a top-level
  subnet or security groups (``InvalidParameterCombination``), an ``efa-only``
  primary, EFA on a type without ``EfaSupported``, more EFA interfaces than
  ``EfaInfo.MaximumEfaInterfaces``, one network card given two EFAs or one
  (card, device) slot twice, a card index past ``MaximumNetworkCards``.
* Application: moto keys an instance's ENIs by device index alone, so the
  interfaces of cards 1+ (all DeviceIndex 1) are created and attached here
  under a key of their own, and every ENI keeps its ``InterfaceType`` and
  ``NetworkCardIndex`` (moto hard-codes ``interface`` and 0).
The codes are EC2's; the exact code for the EFA-specific refusals is
unconfirmed (the adapter checks all of these before it launches).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from moto.ec2.models.elastic_network_interfaces import Attachment
from moto.ec2.models.instance_types import INSTANCE_TYPES
from moto.ec2.models.instances import Instance

from atomic_gang_fakeaws.errors import AwsError

TYPES = ("interface", "efa", "efa-only")
EFA_TYPES = frozenset({"efa", "efa-only"})
CARD_KEY = 1000  # moto's ENI dict key for card c, device d: c * CARD_KEY + d
_ATTACHMENT_INIT = Attachment.__init__


def normalised(raw: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for nic in raw or []:
        if nic.get("DeviceIndex") is None:
            raise AwsError("MissingParameter", "The request must contain the parameter DeviceIndex")
        out.append(
            {
                **nic,
                "DeviceIndex": int(nic["DeviceIndex"]),
                "NetworkCardIndex": int(nic.get("NetworkCardIndex") or 0),
                "InterfaceType": str(nic.get("InterfaceType") or "interface"),
            }
        )
    return out


def network_info(instance_type: str) -> dict[str, Any]:
    info: dict[str, Any] = (INSTANCE_TYPES.get(instance_type) or {}).get("NetworkInfo") or {}
    return info


def _combination(message: str) -> AwsError:
    return AwsError("InvalidParameterCombination", message)


def check_top_level(nics: list[dict[str, Any]], *, subnet: Any, groups: Any) -> None:
    if nics and subnet:
        raise _combination(
            "Network interfaces and an instance-level subnet ID may not be specified on"
            " the same request"
        )
    if nics and groups:
        raise _combination(
            "Network interfaces and an instance-level security groups may not be specified"
            " on the same request"
        )


def _check_slots(nics: list[dict[str, Any]], instance_type: str, info: dict[str, Any]) -> None:
    cards = int(info.get("MaximumNetworkCards") or 1)
    slots = Counter((n["NetworkCardIndex"], n["DeviceIndex"]) for n in nics)
    for (card, device), times in sorted(slots.items()):
        if card >= cards:
            raise AwsError(
                "InvalidParameterValue",
                f"NetworkCardIndex {card} is not valid for {instance_type}: it has {cards}"
                f" network card(s) (0-{cards - 1})",
            )
        if times > 1:
            raise AwsError(
                "InvalidParameterValue",
                f"Network card {card} device index {device} is used by more than one interface",
            )
    for nic in nics:
        if nic["InterfaceType"] not in TYPES:
            raise AwsError(
                "InvalidParameterValue",
                f"Value ({nic['InterfaceType']}) for parameter InterfaceType is invalid."
                f" Valid values: {', '.join(TYPES)}",
            )


def _check_efa(nics: list[dict[str, Any]], instance_type: str, info: dict[str, Any]) -> None:
    efas = [n for n in nics if n["InterfaceType"] in EFA_TYPES]
    if not efas:
        return
    if not info.get("EfaSupported"):
        raise AwsError(
            "InvalidParameterCombination",
            f"The instance type {instance_type} does not support Elastic Fabric Adapter interfaces",
        )
    primary = [n for n in nics if (n["NetworkCardIndex"], n["DeviceIndex"]) == (0, 0)]
    if primary and primary[0]["InterfaceType"] == "efa-only":
        raise _combination(
            "An EFA-only network interface cannot be the primary network interface"
            " (network card index 0, device index 0); use efa"
        )
    limit = int((info.get("EfaInfo") or {}).get("MaximumEfaInterfaces") or 0)
    if len(efas) > limit:
        raise AwsError(
            "InvalidParameterValue",
            f"{instance_type} supports at most {limit} EFA interface(s); the request has"
            f" {len(efas)}",
        )
    per_card = Counter(n["NetworkCardIndex"] for n in efas)
    for card, times in sorted(per_card.items()):
        if times > 1:
            raise AwsError(
                "InvalidParameterValue",
                f"Network card {card} has {times} EFA interfaces; one network card takes one",
            )


def validate(nics: list[dict[str, Any]], instance_type: str) -> None:
    """Raise what EC2 raises for these interfaces on this instance type."""
    if not nics:
        return
    info = network_info(instance_type)
    _check_slots(nics, instance_type, info)
    _check_efa(nics, instance_type, info)


def moto_part(nics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What moto may create itself: card 0's interfaces (its keys are device indexes)."""
    return [n for n in nics if n["NetworkCardIndex"] == 0]


def _stamp(eni: Any, nic: dict[str, Any]) -> None:
    eni.interface_type = nic["InterfaceType"]
    eni.network_card_index = nic["NetworkCardIndex"]


def apply(backend: Any, inst: Any, nics: list[dict[str, Any]], eni_tags: dict[str, str]) -> None:
    """Give one launched instance the rest of its interfaces, all typed and carded."""
    for nic in nics:
        key = nic["NetworkCardIndex"] * CARD_KEY + nic["DeviceIndex"]
        if nic["NetworkCardIndex"] == 0:
            eni = inst.nics.get(nic["DeviceIndex"])
        else:
            eni = backend.create_network_interface(
                nic.get("SubnetId") or inst.subnet_id,
                None,
                group_ids=list(nic.get("Groups") or []),
                description=nic.get("Description"),
                tags=eni_tags,
                delete_on_termination=nic.get("DeleteOnTermination") is not False,
            )
            inst.nics[key] = eni
            eni.instance, eni.status = inst, "in-use"
            eni.attachment_id = f"eni-attach-{eni.id[4:]}"
            eni.attach_time, eni.device_index = inst.launch_time, nic["DeviceIndex"]
        if eni is not None:
            _stamp(eni, nic)


def attachment_init(self: Any, eni: Any) -> None:
    _ATTACHMENT_INIT(self, eni)
    self.network_card_index = getattr(eni, "network_card_index", 0)


def detach_eni(self: Any, eni: Any) -> None:
    """moto pops by device index, which is not unique across network cards."""
    for key, found in list(self.nics.items()):
        if found is eni:
            del self.nics[key]
    eni.instance = None
    eni.attachment_id = None
    eni.attach_time = None
    eni.status = "available"
    eni.device_index = None


PATCHES: list[tuple[Any, str, Any]] = [
    (Attachment, "__init__", attachment_init),
    (Instance, "detach_eni", detach_eni),
]

"""A launch's network as EC2 sees it: placement group, interfaces, topology.

``ec2_launch`` asks this module three things: the launch's network from the
request merged with its launch template (or a fleet override), validated like
EC2 does (:func:`for_run`, :class:`FleetFit`); whether it fits (group AZ,
group capacity, subnet addresses); and, around moto's own launch, to apply it
(:func:`run_context`, :func:`fleet_context`). The application happens in one
patch on moto's backend ``run_instances``, which RunInstances and CreateFleet
both reach: the interfaces moto cannot make, the group membership and the
network nodes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from moto.ec2.models.instances import InstanceBackend

from atomic_gang_fakeaws import efa, placement, topology
from atomic_gang_fakeaws.capacity import UNLIMITED, check_addresses
from atomic_gang_fakeaws.state import FakeState, active

_RUN = InstanceBackend.run_instances
_tls = threading.local()


@dataclass(frozen=True)
class LaunchNet:
    group: placement.Group | None = None
    nics: tuple[dict[str, Any], ...] = ()
    eni_tags: dict[str, str] = field(default_factory=dict)

    @property
    def subnet_id(self) -> str | None:
        return next((str(n["SubnetId"]) for n in self.nics if n.get("SubnetId")), None)

    def check(
        self, state: FakeState, backend: Any, *, zone: str, instance_type: str, count: int
    ) -> None:
        """Raise what EC2 raises when ``count`` such instances cannot launch."""
        if self.group is not None:
            placement.check_launch(
                state, backend, self.group, zone=zone, instance_type=instance_type, count=count
            )
        per_subnet = Counter(
            str(n["SubnetId"])
            for n in self.nics
            if n.get("SubnetId") and n["InterfaceType"] != "efa-only"
        )
        for subnet_id, per_instance in sorted(per_subnet.items()):
            check_addresses(backend.get_subnet(subnet_id), count * per_instance)


def _tags(data: dict[str, Any], request_tags: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in data.get("TagSpecifications") or []:
        if spec.get("ResourceType") == "network-interface":
            out.update({t["Key"]: t.get("Value", "") for t in spec.get("Tags", [])})
    return {**out, **request_tags}


def _placement_of(request: dict[str, Any] | None, data: dict[str, Any]) -> dict[str, Any]:
    request = request or {}
    if request.get("GroupName") or request.get("GroupId"):
        return request
    found: dict[str, Any] = data.get("Placement") or {}
    return found


def resolve(
    backend: Any,
    *,
    data: dict[str, Any],
    instance_type: str,
    request: dict[str, Any],
    subnet_fill: str | None = None,
) -> LaunchNet:
    """The request (or fleet override) merged with its template, validated."""
    nics = efa.normalised(request.get("NetworkInterfaces") or data.get("NetworkInterfaces"))
    if subnet_fill:
        nics = [{**n, "SubnetId": n.get("SubnetId") or subnet_fill} for n in nics]
    groups = (
        request.get("SecurityGroupIds")
        or request.get("SecurityGroups")
        or data.get("SecurityGroupIds")
        or data.get("SecurityGroups")
    )
    efa.check_top_level(nics, subnet=request.get("SubnetId"), groups=groups)
    efa.validate(nics, instance_type)
    group = placement.resolve(backend, _placement_of(request.get("Placement"), data))
    tags = _tags(data, request.get("EniTags") or {})
    return LaunchNet(group, tuple(nics), tags)


def for_run(resp: Any, backend: Any, data: dict[str, Any]) -> LaunchNet:
    """A RunInstances request's network (raises EC2's error when it is invalid)."""
    names = ("NetworkInterfaces", "SecurityGroupIds", "SecurityGroups", "SubnetId", "Placement")
    request = {name: resp._get_param(name) for name in names}
    request["EniTags"] = resp._parse_tag_specification().get("network-interface", {})
    itype = resp._get_param("InstanceType") or data.get("InstanceType") or "m1.small"
    return resolve(backend, data=data, instance_type=itype, request=request)


def interface_subnet(resp: Any, data: dict[str, Any]) -> str | None:
    """The subnet a launch with interfaces (and no top-level subnet) goes into."""
    nics = resp._get_param("NetworkInterfaces") or data.get("NetworkInterfaces") or []
    return next((str(n["SubnetId"]) for n in nics if n.get("SubnetId")), None)


class FleetFit:
    """Per override of an instant fleet: its network, and the room its group has left."""

    def __init__(self, state: FakeState, backend: Any) -> None:
        self._state, self._backend = state, backend
        self._taken: Counter[str] = Counter()
        self._zones: dict[str, str] = {}  # a cluster group's AZ within this one fleet
        self._last: tuple[LaunchNet, str] | None = None
        self.nets: dict[tuple[str | None, str], LaunchNet] = {}

    def room(
        self, data: dict[str, Any], override: dict[str, Any], *, zone: str, instance_type: str
    ) -> int:
        """Instances the override's group still holds (UNLIMITED: no limit); AwsError if
        the override is invalid."""
        net = resolve(
            self._backend,
            data=data,
            instance_type=instance_type,
            request={"Placement": override.get("Placement")},
            subnet_fill=override.get("SubnetId"),
        )
        self.nets[(override.get("SubnetId"), instance_type)] = net
        self._last = (net, zone)
        if net.group is None:
            return UNLIMITED
        conflict = placement.zone_conflict(
            self._backend, net.group, zone, also=self._zones.get(net.group.name)
        )
        if conflict is not None:
            raise conflict
        free = placement.free(self._state, self._backend, net.group, instance_type)
        return UNLIMITED if free is None else max(0, free - self._taken[net.group.name])

    def take(self, count: int) -> None:
        if self._last is None or self._last[0].group is None or not count:
            return
        group, zone = self._last[0].group, self._last[1]
        self._taken[group.name] += count
        if group.strategy == "cluster":
            self._zones[group.name] = zone


@contextmanager
def run_context(net: LaunchNet) -> Iterator[None]:
    _tls.run = net
    try:
        yield
    finally:
        _tls.run = None


@contextmanager
def fleet_context(fit: FleetFit) -> Iterator[None]:
    """While moto launches a fleet: each override's network, by (subnet, type)."""
    _tls.fleet = fit.nets
    try:
        yield
    finally:
        _tls.fleet = None


def _current(kwargs: dict[str, Any]) -> LaunchNet | None:
    if kwargs.get("fleet_id"):
        nets: dict[tuple[str | None, str], LaunchNet] = getattr(_tls, "fleet", None) or {}
        return nets.get((kwargs.get("subnet_id"), str(kwargs.get("instance_type", ""))))
    found: LaunchNet | None = getattr(_tls, "run", None)
    return found


def run_instances(self: Any, image_id: Any, count: int, *args: Any, **kwargs: Any) -> Any:
    state = active()
    net = _current(kwargs) if state is not None else None
    if net is not None and net.nics:
        kwargs["nics"] = efa.moto_part(list(net.nics))
        if not kwargs.get("fleet_id"):
            kwargs["subnet_id"] = None
    reservation = _RUN(self, image_id, count, *args, **kwargs)
    if state is None:
        return reservation
    group = net.group if net is not None else None
    for inst in reservation.instances:
        if net is not None and net.nics:
            efa.apply(self, inst, list(net.nics), net.eni_tags)
    if group is not None:
        placement.join(group, reservation.instances)
    topology.assign(state, self, reservation.instances, group)
    return reservation


PATCHES: list[tuple[Any, str, Any]] = [(InstanceBackend, "run_instances", run_instances)]

"""RunInstances and CreateFleet made to behave like EC2 where we depend on it.

* ClientToken idempotency: same token and parameters → the original answer;
  different parameters → ``IdempotentParameterMismatch``. RunInstances is
  zonal when a subnet or AZ is given; only successful launches are recorded.
* Capacity: see ``capacity``; instant fleets honour MinTargetCapacity, spread
  across their overrides in order, and report ``Errors`` for what is missing.
* Reservations (``ec2_reservations``): the target and market type of the
  request or its launch template; ``DefaultTargetCapacityType=capacity-block``.
* Fix-ups moto lacks: the launch template's instance profile and IMDS options
  on *every* instance, primary ENI DeleteOnTermination and ENI tags, the
  request's ClientToken and ``aws:ec2:fleet-id`` on fleet instances.
* The ``malformed_fleet`` rule drops ids from a CreateFleet answer; the
  ``fleet_error`` rule answers with only ``Errors`` (nothing launched).
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from moto.core.responses import ActionResult
from moto.ec2.models.fleets import Fleet
from moto.ec2.models.instances import MetadataOptions
from moto.ec2.responses.fleets import Fleets
from moto.ec2.responses.instances import InstanceResponse
from moto.ec2.utils import random_fleet_id

from atomic_gang_fakeaws import capacity, ec2_reservations, netlaunch
from atomic_gang_fakeaws.dispatch import current_rule, flat_params
from atomic_gang_fakeaws.errors import AwsError, idempotent_mismatch, insufficient_capacity
from atomic_gang_fakeaws.state import FakeState, Idem, active

_RUN = InstanceResponse.run_instances
_FLEET = Fleets.create_fleet
_SPEC_COUNTS = Fleet.get_launch_spec_counts
_plan = threading.local()
_RESERVING = ("CapacityReservationSpecification", "InstanceMarketOptions", "Placement")
MOTO_DEFAULT_TOKEN = "ABCDE"  # noqa: S105 - what moto stores when no token is sent


def fingerprint(resp: Any) -> str:
    params = {k: v for k, v in flat_params(resp).items() if k != "ClientToken"}
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def _replay(state: FakeState, key: tuple[str, ...], fp: str, token: str) -> Any:
    with state.lock:
        seen = state.idempotency.get(key)
    if seen is None:
        return None
    if seen.fingerprint != fp:
        raise idempotent_mismatch(token)
    return seen.result


def template_data(backend: Any, spec: dict[str, Any] | None) -> dict[str, Any]:
    if not spec:
        return {}
    data: dict[str, Any] = backend._get_template_from_args(spec).data
    return data


def fix_instances(
    backend: Any,
    instances: list[Any],
    data: dict[str, Any],
    *,
    token: str | None = None,
    fleet_id: str | None = None,
    eni_tags: dict[str, str] | None = None,
) -> None:
    profile = data.get("IamInstanceProfile") or {}
    tags = {**_tags_for(data, "network-interface"), **(eni_tags or {})}
    for inst in instances:
        if profile and inst.id not in backend.iam_instance_profile_associations:
            backend.associate_iam_instance_profile(
                instance_id=inst.id,
                iam_instance_profile_name=profile.get("Name"),
                iam_instance_profile_arn=profile.get("Arn"),
            )
        if data.get("MetadataOptions"):
            inst.metadata_options = MetadataOptions(data["MetadataOptions"])
        primary = inst.nics.get(0)
        if primary is not None:
            primary.delete_on_termination = True
            primary.add_tags(tags)
        if token and inst.client_token in (None, "", MOTO_DEFAULT_TOKEN):
            inst.client_token = token
        if fleet_id:
            inst.add_tags({"aws:ec2:fleet-id": fleet_id})


def _tags_for(data: dict[str, Any], resource_type: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in data.get("TagSpecifications") or data.get("TagSpecification") or []:
        if spec.get("ResourceType") == resource_type:
            out.update({t["Key"]: t.get("Value", "") for t in spec.get("Tags", [])})
    return out


def run_instances(self: Any) -> Any:
    state = active()
    token = self._get_param("ClientToken")
    if state is None or not token:
        return _RUN(self)
    # Check, launch and record as one step: a retry racing its original (server
    # mode is threaded) must get the original's answer, not a second launch.
    with state.lock:
        return _run_instances(self, state, token)


def _run_instances(self: Any, state: FakeState, token: str) -> Any:
    backend = self.ec2_backend
    data = template_data(backend, self._get_param("LaunchTemplate"))
    subnet_id, placement = (
        self._get_param("SubnetId") or netlaunch.interface_subnet(self, data),
        self._get_param("Placement.AvailabilityZone"),
    )
    zone = backend.get_subnet(subnet_id).availability_zone if subnet_id else placement
    key = (self.current_account, self.region, "RunInstances", token, zone or "regional")
    fp = fingerprint(self)
    seen = _replay(state, key, fp, token)
    if seen is not None:
        return ActionResult(seen)
    intent = ec2_reservations.launch_intent({k: self._get_param(k) for k in _RESERVING}, data)
    ec2_reservations.check_market(state, intent)
    net = netlaunch.for_run(self, backend, data)
    count = int(self._get_param("MinCount", 1))
    target = ec2_reservations.target_for(
        state,
        backend,
        intent,
        zone=zone or self.region + "a",
        itype=self._get_param("InstanceType") or data.get("InstanceType") or "m1.small",
        count=count,
    )
    if subnet_id:
        capacity.check_addresses(backend.get_subnet(subnet_id), count)
    capacity.check(state, backend, target, count)
    net.check(state, backend, zone=target.zone, instance_type=target.instance_type, count=count)
    with netlaunch.run_context(net):
        result = _RUN(self)
    reservation: Any = result.result
    eni_tags = _request_tags(self, "network-interface")
    profile = self._get_param("IamInstanceProfile") or data.get("IamInstanceProfile")
    fixes = {**data, "IamInstanceProfile": profile} if profile else data
    fix_instances(backend, reservation.instances, fixes, token=token, eni_tags=eni_tags)
    with state.lock:
        ec2_reservations.mark_instances(state, reservation.instances, target.reservation_id)
        state.idempotency[key] = Idem(fp, reservation)
    return result


def _request_tags(resp: Any, resource_type: str) -> dict[str, str]:
    specs = resp._get_param("TagSpecifications") or resp._get_param("TagSpecification") or []
    return _tags_for({"TagSpecifications": specs}, resource_type)


def _spec_counts(self: Any, weight_to_add: float) -> Any:
    """Fleet allocation: our per-override plan once, then nothing more."""
    plan: list[int] | None = getattr(_plan, "counts", None)
    if plan is None:
        return _SPEC_COUNTS(self, weight_to_add)
    _plan.counts = []
    counts = {spec: n for spec, n in zip(self.launch_specs, plan, strict=False) if n}
    return counts, float(sum(plan))


def _allocate(
    state: FakeState,
    backend: Any,
    configs: list[dict[str, Any]],
    total: int,
    *,
    kind: str,
    fit: netlaunch.FleetFit,
) -> tuple[list[int], list[dict[str, Any]]]:
    """Fill overrides in order from free capacity; errors name the short ones."""
    counts: list[int] = []
    errors: list[dict[str, Any]] = []
    taken: dict[capacity.Target, int] = {}
    for config in configs:
        lt_spec = config.get("LaunchTemplateSpecification") or {}
        data = template_data(backend, lt_spec)
        for override in config.get("Overrides") or [{}]:
            subnet = override.get("SubnetId")
            zone = (
                backend.get_subnet(subnet).availability_zone
                if subnet
                else override.get("AvailabilityZone", "")
            )
            itype = override.get("InstanceType") or data.get("InstanceType", "")
            try:
                room = fit.room(data, override, zone=zone, instance_type=itype)
            except AwsError as err:  # an invalid override launches nothing; EC2 says why
                counts.append(0)
                errors.append(_fleet_error(lt_spec, override, err, kind))
                continue
            target, refusal = ec2_reservations.fleet_target(
                state, data, zone=zone, itype=itype, capacity_type=kind
            )
            free = capacity.free(state, backend, target) - taken.get(target, 0)
            free = 0 if refusal else min(free, room)
            if subnet:
                free = min(free, backend.get_subnet(subnet).available_ip_address_count)
            n = max(0, min(free, total - sum(counts)))
            taken[target] = taken.get(target, 0) + n
            fit.take(n)
            counts.append(n)
            if sum(counts) < total and n < total:
                short = (
                    AwsError("InvalidFleetConfiguration", refusal)
                    if refusal
                    else insufficient_capacity(itype, zone)
                )
                errors.append(_fleet_error(lt_spec, override, short, kind))
    return counts, errors


def _fleet_error(
    lt_spec: dict[str, Any], override: dict[str, Any], err: AwsError, kind: str = "on-demand"
) -> dict[str, Any]:
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": lt_spec,
            "Overrides": override,
        },
        "Lifecycle": kind,
        "ErrorCode": err.error_code,
        "ErrorMessage": err.message,
    }


def _errors_only(self: Any, code: str, message: str) -> dict[str, Any]:
    """An instant fleet that launched nothing, one error per override."""
    errors = [
        _fleet_error(config.get("LaunchTemplateSpecification") or {}, o, AwsError(code, message))
        for config in self._get_param("LaunchTemplateConfigs", [])
        for o in config.get("Overrides") or [{}]
    ]
    return {"FleetId": random_fleet_id(), "Instances": [], "Errors": errors}


def create_fleet(self: Any) -> Any:
    state = active()
    token = self._get_param("ClientToken")
    if state is None or self._get_param("Type") != "instant":
        return _FLEET(self)
    with state.lock:  # as in run_instances
        return _create_fleet(self, state, token)


def _create_fleet(self: Any, state: FakeState, token: str | None) -> Any:
    key = (self.current_account, self.region, "CreateFleet", token or "", "regional")
    fp = fingerprint(self)
    if token:
        seen = _replay(state, key, fp, token)
        if seen is not None:
            return ActionResult(seen)
    rule = current_rule()
    if rule is not None and rule.effect == "fleet_error":
        return ActionResult(_errors_only(self, rule.code, rule.message))
    result = _launch_fleet(self, state, token)
    if rule is not None and rule.effect == "malformed_fleet":
        result["Instances"] = result["Instances"][: max(0, len(result["Instances"]) - rule.drop)]
    if token:
        with state.lock:
            state.idempotency[key] = Idem(fp, result)
    return ActionResult(result)


def _launch_fleet(self: Any, state: FakeState, token: str | None) -> dict[str, Any]:
    backend = self.ec2_backend
    target = self._get_param("TargetCapacitySpecification", {})
    total = int(target.get("TotalTargetCapacity", 0))
    kind = str(target.get("DefaultTargetCapacityType") or "on-demand")
    minimum = int(self._get_param("OnDemandOptions", {}).get("MinTargetCapacity") or 0)
    fit = netlaunch.FleetFit(state, backend)
    configs = self._get_param("LaunchTemplateConfigs", [])
    counts, errors = _allocate(state, backend, configs, total, kind=kind, fit=fit)
    if sum(counts) < max(minimum, 1):
        return {"FleetId": random_fleet_id(), "Instances": [], "Errors": errors}
    if kind == "capacity-block":
        # moto knows only spot and on-demand; a block launches like on-demand here.
        target["DefaultTargetCapacityType"] = "on-demand"
    _plan.counts = counts
    try:
        with netlaunch.fleet_context(fit):
            launched: Any = _FLEET(self).result
        result: dict[str, Any] = dict(launched)
    finally:
        _plan.counts = None
    fleet = backend.fleets[result["FleetId"]]
    for item in fleet.on_demand_instances:
        data = template_data(backend, item["launch_spec"].launch_template_spec)
        fix_instances(backend, [item["instance"]], data, token=token, fleet_id=fleet.id)
        rid = capacity.reservation_target(data)
        ec2_reservations.mark_instances(state, [item["instance"]], rid)
    result["Instances"] = [{**i, "Lifecycle": kind} for i in result.get("Instances") or []]
    if errors and sum(counts) < total:
        result["Errors"] = errors
    return result


PATCHES: list[tuple[Any, str, Any]] = [
    (InstanceResponse, "run_instances", run_instances),
    (Fleets, "create_fleet", create_fleet),
    (Fleet, "get_launch_spec_counts", _spec_counts),
]

"""Acquisition: adopt first, then launch N-or-0, then validate.

Adoption: a crash between "EC2 returned" and "ids persisted" leaves a set
tagged with this (pool, generation). It is looked up by tag before any launch;
exactly N live → adopted, anything else → terminated (a shortfall). The launch
itself re-derives the same ClientTokens, so a retry whose first response was
lost gets the original reservation back from EC2; a replayed answer is read
again, and a set that is gone by now is rolled back, never reported launched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.aws import parse
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.cluster import Placement
from atomic_gang_provisioner.cloud.aws.inventory import Inventory
from atomic_gang_provisioner.cloud.aws.launch import (
    LaunchPlan,
    exactly_n,
    fleet_instance_ids,
    fleet_params,
    fleet_template_data,
    run_instances_params,
    token_for,
)
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.aws.templates import Templates
from atomic_gang_provisioner.cloud.error_codes import (
    IDEMPOTENCY_MISMATCH,
    OVER_BUDGET,
    CloudError,
    hint_for,
)
from atomic_gang_provisioner.cloud.naming import FLEET_ZONE
from atomic_gang_provisioner.cloud.turns.launchgate import budget_message
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    Instance,
    Launched,
    PermanentFailure,
    QuotaExceeded,
    RetryLater,
    Shortfall,
    UnknownLaunch,
    Waiting,
    ZoneAttempt,
    tag_tuple,
)

FLEET_ID_TAG = "aws:ec2:fleet-id"
REPLAY_AGE = timedelta(minutes=2)


def failure(err: CloudError) -> AcquireResult:
    """A non-capacity error as a result; capacity never reaches here."""
    if err.kind == "quota":
        return QuotaExceeded(code=err.code, message=err.message)
    if err.code == OVER_BUDGET:  # another pool took the token first: no call was sent
        retry = err.retry_after or 0.0
        return Waiting(
            reason=FailureReason.WAITING_FOR_LAUNCH_BUDGET,
            message=budget_message(0),
            retry_after=retry,
        )
    if err.retryable:
        throttled = err.kind == "throttled"
        return RetryLater(
            code=err.code,
            message=err.message,
            retry_after=err.retry_after if throttled else None,
            launched_nothing=throttled,  # EC2 refused the call unprocessed
        )
    return PermanentFailure(
        code=err.code, message=err.message, hint=hint_for(err.code), reason=err.reason
    )


def replayed_first(plan: LaunchPlan) -> tuple[Placement, ...]:
    """The plan's placements, the unknown launch's zone first when it is this plan's."""
    replay = plan.replay
    if replay is None:
        return plan.placements
    hit = [p for p in plan.placements if token_for(plan, p.zone) == replay.token]
    return (*hit, *(p for p in plan.placements if p not in hit))


def unknown_outcome(result: AcquireResult, zone: str, token: str) -> AcquireResult:
    """A transient failure that EC2 may have acted on (not a throttle, which it refused
    unprocessed) names its launch, to be replayed first."""
    if isinstance(result, RetryLater) and not result.launched_nothing:
        return replace(result, unknown=UnknownLaunch(zone=zone, token=token))
    return result


class Acquirer:
    def __init__(
        self,
        *,
        clients: AwsClients,
        caller: Caller,
        inventory: Inventory,
        templates: Templates,
        wall: Callable[[], datetime],
    ) -> None:
        self._wall = wall
        self._ec2 = clients.ec2
        self._caller = caller
        self._inv = inventory
        self._templates = templates

    def _call(self, op: str, **params: Any) -> dict[str, Any]:
        return self._caller.call(self._ec2, op, **params)

    def adopt(self, request: AcquireRequest) -> AcquireResult | None:
        found = list(self._inv.find_group(pool=request.pool, generation=request.generation))
        if not found:
            return None
        fleets = sorted({f for i in found if (f := i.tag(FLEET_ID_TAG))})
        if exactly_n(found, request.spec.count):
            return Launched(
                instances=tuple(sorted(found, key=lambda i: i.instance_id)),
                client_token=found[0].client_token,
                fleet_id=fleets[0] if fleets else None,
                adopted=True,
            )
        return self._rollback(
            [i.instance_id for i in found], fleets, "PartialSetFound", f"found {len(found)}"
        )

    def _rollback(self, ids: list[str], fleets: list[str], code: str, what: str) -> Shortfall:
        if fleets:
            self._inv.delete_fleets(fleets)
        if ids:
            self._inv.terminate(ids)
        return Shortfall(
            attempts=(ZoneAttempt(zone="-", code=code, message=what),),
            rolled_back=tuple(sorted(ids)),
        )

    def _validated(
        self, plan: LaunchPlan, instances: list[Instance], token: str, fleet: str | None
    ) -> AcquireResult:
        if exactly_n(instances, plan.spec.count):
            return Launched(
                instances=tuple(instances),
                client_token=token,
                fleet_id=fleet,
                reservation=plan.reservation,
            )
        what = f"expected {plan.spec.count} distinct live ids, got {len(instances)}"
        ids = [i.instance_id for i in instances]
        return self._rollback(ids, [fleet] if fleet else [], "MalformedResponse", what)

    def zone_by_zone(self, plan: LaunchPlan) -> AcquireResult:
        """runinstances mode: one all-or-nothing RunInstances per zone, in order, until
        one zone gives all N (a capacity error moves on to the next).

        Idempotency is zonal (the ClientToken names the zone), so a launch whose outcome
        is unknown is sent again first, before any other zone: EC2's answer to it, a
        set or a refusal, is the only thing that may move the sweep on. An unknown
        outcome ends the attempt, naming that launch for the next one."""
        attempts: list[ZoneAttempt] = []
        for placement in replayed_first(plan):
            token = token_for(plan, placement.zone)
            try:
                resp = self._call("run_instances", **run_instances_params(plan, placement, token))
            except CloudError as err:
                if err.kind != "capacity" and err.code != IDEMPOTENCY_MISMATCH:
                    return unknown_outcome(failure(err), placement.zone, token)
                attempt = ZoneAttempt(zone=placement.zone, code=err.code, message=err.message)
                attempts.append(attempt)
                continue
            found = [parse.instance(i) for i in resp.get("Instances", [])]
            return self._validated(plan, self._current(found), token, None)
        return Shortfall(attempts=tuple(attempts))

    def _current(self, answered: list[Instance]) -> list[Instance]:
        """A replayed (idempotent) answer may describe instances long gone: re-read those.

        A fresh launch is all ``pending`` with a launch time of about now; only
        then is the answer trusted as is (a describe right after a launch can
        miss the instances: EC2 reads are eventually consistent).
        """
        cutoff = self._wall() - REPLAY_AGE
        if all(i.state == "pending" and i.launch_time >= cutoff for i in answered):
            return answered
        return self._reread(answered)

    def _reread(self, answered: list[Instance]) -> list[Instance]:
        """The answered ids as EC2 sees them now; an id it no longer shows counts as gone."""
        now = {i.instance_id: i for i in self._inv.describe([i.instance_id for i in answered])}
        return [now.get(i.instance_id, replace(i, state="terminated")) for i in answered]

    def fleet(self, plan: LaunchPlan, user_data_b64: str) -> AcquireResult:
        token = token_for(plan, FLEET_ZONE)
        version, retried = self._templates.generation_version(
            base=plan.template, token=token, data=fleet_template_data(plan, user_data_b64)
        )
        try:
            resp = self._call("create_fleet", **fleet_params(plan, version=version, token=token))
        except CloudError as err:
            if err.kind != "capacity" and err.code != IDEMPOTENCY_MISMATCH:
                return failure(err)
            attempt = ZoneAttempt(zone=FLEET_ZONE, code=err.code, message=err.message)
            return Shortfall(attempts=(attempt,))
        fleet_id = str(resp.get("FleetId") or "") or None
        ids = fleet_instance_ids(resp)
        if ids:
            found = self._fleet_instances(plan, resp, token, fleet_id)
            # A fleet answer carries no states: on a retried token it may be the
            # replay of a set that has since been terminated, so read it again.
            return self._validated(plan, self._reread(found) if retried else found, token, fleet_id)
        errors = [_fleet_error(e) for e in resp.get("Errors", [])]
        blocking = [e for e in errors if e.kind != "capacity"]
        if blocking:
            return failure(blocking[0])
        zones = {p.subnet_id: p.zone for p in plan.placements}
        attempts = tuple(
            ZoneAttempt(zone=_override_zone(e, zones), code=err.code, message=err.message)
            for e, err in zip(resp.get("Errors", []), errors, strict=True)
        )
        empty = ZoneAttempt(zone=FLEET_ZONE, code="NoInstances", message="fleet launched nothing")
        return Shortfall(attempts=attempts or (empty,))

    def _fleet_instances(
        self, plan: LaunchPlan, resp: dict[str, Any], token: str, fleet_id: str | None
    ) -> list[Instance]:
        """Instances as the fleet answer describes them (no read-after-write race)."""
        zones = {p.subnet_id: p.zone for p in plan.placements}
        tags = {**plan.tags, **({FLEET_ID_TAG: fleet_id} if fleet_id else {})}
        out = []
        for group in resp.get("Instances", []):
            zone = _override_zone(group, zones)
            for iid in group.get("InstanceIds", []):
                out.append(
                    Instance(
                        instance_id=iid,
                        state="pending",
                        availability_zone=zone,
                        instance_type=str(group.get("InstanceType", plan.spec.instance_type)),
                        launch_time=self._wall(),
                        tags=tag_tuple(tags),
                        client_token=token,
                    )
                )
        return out


def _fleet_error(raw: dict[str, Any]) -> CloudError:
    return CloudError(str(raw.get("ErrorCode", "")), str(raw.get("ErrorMessage", "")))


def _override_zone(item: dict[str, Any], zones: dict[str, str]) -> str:
    over = item.get("LaunchTemplateAndOverrides", {}).get("Overrides", {})
    return zones.get(str(over.get("SubnetId", "")), str(over.get("AvailabilityZone", FLEET_ZONE)))

"""From an AcquireRequest to launch calls: resolve, judge reservations, launch.

Everything that can refuse a gang without billing runs first: placements,
AMI, instance profile, the node role's right to join, and the Job's listed
reservations (described once for every pool that needs them, judged by
``cloud.reservations``). An unfit, upcoming, short or ending reservation costs
no launch call. The usable ones are then tried in the Job's order, each with a
ClientToken of its own; a capacity shortfall in one moves on to the next. Each
launch first waits its turn (``Turns``: short capacity cells, EC2's launch budget).
A runinstances pool launches from its shape's shared template (named by the template
data's digest), so a new pool of a known shape costs no template call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from atomic_gang import GangSpec, keys
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.aws import efa
from atomic_gang_provisioner.cloud.aws.acquire import Acquirer
from atomic_gang_provisioner.cloud.aws.cluster import ClusterInfo, Placement, Resolver
from atomic_gang_provisioner.cloud.aws.launch import LaunchNetwork, LaunchPlan, base_template_data
from atomic_gang_provisioner.cloud.aws.launch_turns import Turns
from atomic_gang_provisioner.cloud.aws.placement import PlacementGroups
from atomic_gang_provisioner.cloud.aws.reservation_book import (
    ReservationBook,
    attempts_of,
    unusable,
)
from atomic_gang_provisioner.cloud.aws.templates import TemplateRef, Templates, digest
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.reservation_fit import Reservation, choose, listed, release_by
from atomic_gang_provisioner.cloud.userdata import user_data, user_data_b64
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    Launched,
    Shortfall,
    Waiting,
    ZoneAttempt,
)
from atomic_gang_provisioner.timestamps import rfc3339


@dataclass(frozen=True, slots=True)
class Prepared:
    info: ClusterInfo
    placements: tuple[Placement, ...]
    data: dict[str, Any]
    efa_interfaces: int = 0


def _tags(request: AcquireRequest, cluster: str, res: Reservation | None) -> dict[str, str]:
    """The group's tags; a block's instances also carry when they must be gone (the
    reaper's cap, so it holds after a restart)."""
    spec = request.spec
    tags = naming.group_tags(
        cluster=cluster, spec=spec, generation=request.generation, group=_group(request)
    )
    if res is not None and res.capacity_block and res.end is not None:
        cap = release_by(res.end, request.block_policy.drain_lead)
        tags[keys.RELEASE_BY_TAG] = rfc3339(cap)
    return tags


def _group(request: AcquireRequest) -> str | None:
    """The group label a repair's replacements keep; None: the generation's own."""
    return request.repair.group if request.repair is not None else None


def _where(request: AcquireRequest, placements: tuple[Placement, ...]) -> tuple[Placement, ...]:
    """A repair's placements: those in the gang's zones (a placement group, EFA and the
    gang's collectives need its replacements beside the nodes it kept)."""
    repair = request.repair
    if repair is None or not repair.zones:
        return placements
    return tuple(p for p in placements if p.zone in repair.zones)


class Planner:
    def __init__(
        self,
        *,
        cluster: str,
        resolver: Resolver,
        templates: Templates,
        groups: PlacementGroups,
        acquirer: Acquirer,
        book: ReservationBook,
        turns: Turns,
        wall: Callable[[], datetime],
    ) -> None:
        self._cluster = cluster
        self._resolver = resolver
        self._templates = templates
        self._groups = groups
        self._acquirer = acquirer
        self._book = book
        self._turns = turns
        self._wall = wall

    def acquire(self, request: AcquireRequest) -> AcquireResult:
        prepared = self._prepare(request)
        ids = listed(request.spec)
        if not ids:
            return self._try(request, self._plan(request, prepared, prepared.placements, None))
        found = self._book.get(ids, also=request.also_reservations)
        choice = choose(
            request.spec,
            found,
            zones={p.zone for p in prepared.placements},
            now=self._wall(),
            policy=request.block_policy,
            order=ids,
        )
        if not choice.usable:
            return unusable(choice)
        attempts: list[ZoneAttempt] = attempts_of(choice)
        rolled_back: list[str] = []
        behind: Waiting | None = None
        sent = False
        for res in replayed_first(choice.usable, request):
            fitting = tuple(p for p in prepared.placements if p.zone == res.zone)
            result = self._try(request, self._plan(request, prepared, fitting, res))
            if isinstance(result, Waiting):
                if result.reason is FailureReason.WAITING_FOR_LAUNCH_BUDGET:
                    return result  # the budget is the account's: no other one goes sooner
                behind = behind or result  # another pool probes this one: try the next
                continue
            sent = True
            self._book.invalidate(res.reservation_id)  # its available count has moved
            if not isinstance(result, Shortfall):
                return result
            attempts.extend(result.attempts)
            rolled_back.extend(result.rolled_back)
        if behind is not None and not sent:
            return behind  # nothing was sent: wait behind the pool ahead
        return Shortfall(attempts=tuple(attempts), rolled_back=tuple(rolled_back))

    def with_reservation(self, adopted: Launched) -> Launched:
        """An adopted set's reservation, from what EC2 shows on its instances."""
        rids = {i.capacity_reservation_id for i in adopted.instances}
        if len(rids) != 1 or "" in rids:
            return adopted
        (rid,) = rids
        return replace(adopted, reservation=self._book.get([rid])[rid])

    def _try(self, request: AcquireRequest, plan: LaunchPlan) -> AcquireResult:
        turn = self._turns.take(plan, request)
        if isinstance(turn, Waiting):
            return turn
        result = self._launch(turn)
        self._turns.learn(turn, result)
        return result

    def _launch(self, plan: LaunchPlan) -> AcquireResult:
        if plan.spec.mode == "fleet":
            return self._acquirer.fleet(plan, self._user_data_b64(plan))
        return self._acquirer.zone_by_zone(plan)

    def _prepare(self, request: AcquireRequest) -> Prepared:
        spec = request.spec
        info = self._resolver.cluster()
        placements = _where(request, self._resolver.placements(spec))
        efa_interfaces = self._efa(spec, info.security_group_id)
        data = base_template_data(
            spec=spec,
            ami=self._resolver.ami(spec),
            profile=self._resolver.instance_profile(spec),
            security_group=info.security_group_id,
            efa_interfaces=efa_interfaces,
        )
        # Before anything is created or launched: a node that cannot join only bills.
        self._resolver.authorize_node_role(spec.node_role_arn)
        if not placements:
            raise CloudError("NoPlacement", "no subnet in any requested or cluster AZ fits")
        return Prepared(info=info, placements=placements, data=data, efa_interfaces=efa_interfaces)

    def _efa(self, spec: GangSpec, security_group: str) -> int:
        """EFA interfaces per instance, its prerequisites checked (raises if unmet)."""
        if spec.efa is None:
            return 0
        count = efa.interface_count(spec, self._resolver.instance_type(spec.instance_type))
        self._resolver.efa_security_group(security_group)
        return count

    def _plan(
        self,
        request: AcquireRequest,
        prepared: Prepared,
        placements: tuple[Placement, ...],
        reservation: Reservation | None,
    ) -> LaunchPlan:
        spec, cluster = request.spec, self._cluster
        # Last of the checks before a launch: it may create the pool's own group.
        group = self._groups.for_launch(spec, reservation)
        template = self._template(spec, prepared.data)
        labels = naming.node_labels(spec=spec, generation=request.generation, group=_group(request))
        return LaunchPlan(
            spec=spec,
            generation=request.generation,
            template=template,
            base_data=prepared.data,
            placements=placements,
            user_data=user_data(join=prepared.info.join, labels=labels, pool=spec.pool),
            tags=_tags(request, cluster, reservation),
            reservation=reservation,
            network=LaunchNetwork(group, prepared.efa_interfaces, prepared.info.security_group_id),
            replay=request.replay,
            group=_group(request),
        )

    def _template(self, spec: GangSpec, data: dict[str, Any]) -> TemplateRef:
        """runinstances: the shape's shared template, named by its data (a new pool of a
        known shape costs no call). fleet: the pool's own, since CreateFleet takes user
        data only from a template version (one per generation)."""
        cluster = self._cluster
        if spec.mode == "fleet":
            name = naming.launch_template_name(cluster=cluster, spec=spec)
            tags = naming.ownership_tags(cluster=cluster, pool=spec.pool)
        else:
            # The SSM-recommended AMI is not part of the name: when it moves, the shape's
            # template gets a new default version instead of a second template.
            named = data if spec.ami_id else {k: v for k, v in data.items() if k != "ImageId"}
            name = naming.shared_template_name(cluster=cluster, data_digest=digest(named))
            tags = naming.cluster_tags(cluster=cluster)
        return self._templates.ensure(name=name, data=data, tags=tags)

    def _user_data_b64(self, plan: LaunchPlan) -> str:
        info = self._resolver.cluster()
        labels = naming.node_labels(spec=plan.spec, generation=plan.generation, group=plan.group)
        return user_data_b64(join=info.join, labels=labels, pool=plan.spec.pool)


def replayed_first(usable: Sequence[Reservation], request: AcquireRequest) -> list[Reservation]:
    """The reservations in order, the one the unknown launch targeted first: another one
    tried before it could get a second set while the first may exist."""
    replay = request.replay
    if replay is None:
        return list(usable)

    def targeted(res: Reservation) -> bool:
        token = naming.client_token(
            pool=request.spec.pool,
            generation=request.generation,
            zone=res.zone,
            reservation=res.reservation_id,
        )
        return token == replay.token

    return sorted(usable, key=lambda res: not targeted(res))

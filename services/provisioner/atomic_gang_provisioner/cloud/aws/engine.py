"""``Ec2Provider``: the boto3 implementation of the CloudProvider Protocol.

It wires the resolver (cluster, subnets, AMI, profile), the launch-template
manager, the acquirer, the releaser and the inventory around one retrying
caller and one API budget. Before a launch, the short capacity cells and the
launch budget decide whether the pool's turn has come (else: ``Waiting``, no
call); after it, the cells learn from the answer. Clock, monotonic time and
sleeper are injected for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from atomic_gang import GangSpec
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.aws.access import AwsAuthReader
from atomic_gang_provisioner.cloud.aws.acquire import Acquirer, failure
from atomic_gang_provisioner.cloud.aws.batch import Ec2Batches
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.cluster import (
    Resolver,
    describe_reservation,
    fit_reservation,
)
from atomic_gang_provisioner.cloud.aws.inventory import Inventory
from atomic_gang_provisioner.cloud.aws.launch import LaunchPlan, base_template_data, cell_of
from atomic_gang_provisioner.cloud.aws.release import Releaser
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.aws.templates import TemplateRef, Templates, digest
from atomic_gang_provisioner.cloud.batcher import Windows
from atomic_gang_provisioner.cloud.budget import ApiBudget, BudgetLimits
from atomic_gang_provisioner.cloud.capacity import DEFAULT_TTL_SECONDS, ShortCells
from atomic_gang_provisioner.cloud.errors import CloudError, classify
from atomic_gang_provisioner.cloud.launchgate import LaunchGate, since_of
from atomic_gang_provisioner.cloud.retry import Backoff, Sleeper, real_sleeper
from atomic_gang_provisioner.cloud.types import (
    AcquireRequest,
    AcquireResult,
    Instance,
    Launched,
    ReleaseRequest,
    ReleaseResult,
    Shortfall,
    Waiting,
)
from atomic_gang_provisioner.cloud.userdata import user_data, user_data_b64


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    cluster: str
    backoff: Backoff = field(default_factory=Backoff)
    cache_ttl_seconds: float = 600.0
    eni_wait_seconds: float = 60.0
    eni_poll_seconds: float = 2.0
    # iam.selfManageInstanceProfile: create the convention-named profile when missing.
    self_manage_instance_profile: bool = False
    limits: BudgetLimits = field(default_factory=BudgetLimits)
    batch: Windows = field(default_factory=Windows)
    capacity_ttl_seconds: float = DEFAULT_TTL_SECONDS


CELL_POLL = 2.0  # how often a pool behind a short cell asks again (no EC2 call)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Ec2Provider:
    def __init__(
        self,
        *,
        clients: AwsClients,
        config: EngineConfig,
        sleeper: Sleeper = real_sleeper,
        wall: Callable[[], datetime] = _utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        on_call: Callable[[str], None] | None = None,
        aws_auth: AwsAuthReader | None = None,
    ) -> None:
        self.config = config
        self._clients = clients
        budget = ApiBudget(limits=config.limits, clock=monotonic)
        self._caller = Caller(
            backoff=config.backoff, sleeper=sleeper, on_call=on_call, budget=budget
        )
        self._gate = LaunchGate(budget=budget, clock=monotonic)
        self._cells = ShortCells(clock=monotonic, ttl_seconds=config.capacity_ttl_seconds)
        self._resolver = Resolver(
            clients=clients,
            caller=self._caller,
            cluster=config.cluster,
            monotonic=monotonic,
            ttl_seconds=config.cache_ttl_seconds,
            self_manage_profile=config.self_manage_instance_profile,
            aws_auth=aws_auth,
        )
        self._templates = Templates(clients=clients, caller=self._caller)
        batches = Ec2Batches(ec2=clients.ec2, caller=self._caller, windows=config.batch)
        self._inv = Inventory(
            clients=clients, caller=self._caller, cluster=config.cluster, batches=batches
        )
        self._acquirer = Acquirer(
            clients=clients,
            caller=self._caller,
            inventory=self._inv,
            templates=self._templates,
            wall=wall,
        )
        self._releaser = Releaser(
            clients=clients,
            caller=self._caller,
            inventory=self._inv,
            sleeper=sleeper,
            monotonic=monotonic,
            wait_seconds=config.eni_wait_seconds,
            poll_seconds=config.eni_poll_seconds,
        )

    def acquire(self, request: AcquireRequest) -> AcquireResult:
        try:
            adopted = self._acquirer.adopt(request) if request.adopt else None
            if adopted is not None:
                return adopted
            turn = self._turn(self._plan(request), request)
            if isinstance(turn, Waiting):
                return turn
            result = self._launch(turn)
        except CloudError as err:
            return failure(err)
        self._learn(turn, result)
        return result

    def _launch(self, plan: LaunchPlan) -> AcquireResult:
        if plan.spec.mode == "fleet":
            return self._acquirer.fleet(plan, self._user_data_b64(plan))
        return self._acquirer.zone_by_zone(plan)

    def _turn(self, plan: LaunchPlan, request: AcquireRequest) -> LaunchPlan | Waiting:
        """The placements whose cells this pool may try now, and then its turn for
        EC2's launch budget; or why it waits (and no call is sent)."""
        since, behind, open_ = since_of(request), [], []
        for placement in plan.placements:
            cell = cell_of(plan, placement.zone)
            ahead = self._cells.turn(cell, pool=request.pool, since=since)
            if ahead:
                behind.append((ahead, cell))
            else:
                open_.append(placement)
        if not open_:
            ahead, cell = min(behind)
            gangs = f"{ahead} gang{'s' if ahead != 1 else ''} ahead"
            message = f"waiting for {cell}: {gangs}"
            return Waiting(reason="WaitingForCapacity", message=message, retry_after=CELL_POLL)
        operation = "create_fleet" if plan.spec.mode == "fleet" else "run_instances"
        waiting = self._gate.admit(request, operation=operation)
        return waiting or replace(plan, placements=tuple(open_))

    def _learn(self, plan: LaunchPlan, result: AcquireResult) -> None:
        """A capacity error marks its cell short; a launch there clears it."""
        zones = {p.zone for p in plan.placements}
        if isinstance(result, Shortfall):
            for attempt in result.attempts:
                if attempt.zone in zones and classify(attempt.code) == "capacity":
                    self._cells.mark_short(cell_of(plan, attempt.zone))
        elif isinstance(result, Launched):
            for zone in {i.availability_zone for i in result.instances}:
                self._cells.launched(cell_of(plan, zone), plan.spec.pool)

    def _plan(self, request: AcquireRequest) -> LaunchPlan:
        spec, cluster = request.spec, self.config.cluster
        info = self._resolver.cluster()
        placements = self._resolver.placements(spec)
        data = base_template_data(
            spec=spec,
            ami=self._resolver.ami(spec),
            profile=self._resolver.instance_profile(spec),
            security_group=info.security_group_id,
        )
        # Before anything is created or launched: a node that cannot join only bills.
        self._resolver.authorize_node_role(spec.node_role_arn)
        reservation = None
        if spec.capacity_reservation_id:
            reservation = describe_reservation(
                self._clients, self._caller, spec.capacity_reservation_id
            )
            placements = fit_reservation(spec, reservation, placements)
        if not placements:
            raise CloudError("NoPlacement", "no subnet in any requested or cluster AZ fits")
        template = self._template(spec, data)
        labels = naming.node_labels(spec=spec, generation=request.generation)
        return LaunchPlan(
            spec=spec,
            generation=request.generation,
            template=template,
            base_data=data,
            placements=placements,
            user_data=user_data(join=info.join, labels=labels, pool=spec.pool),
            tags=naming.group_tags(cluster=cluster, spec=spec, generation=request.generation),
            reservation=reservation,
        )

    def _template(self, spec: GangSpec, data: dict[str, Any]) -> TemplateRef:
        """runinstances: the shape's shared template, named by its data (a new pool of a
        known shape costs no call). fleet: the pool's own, since CreateFleet takes user
        data only from a template version (one per generation)."""
        cluster = self.config.cluster
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
        labels = naming.node_labels(spec=plan.spec, generation=plan.generation)
        return user_data_b64(join=info.join, labels=labels, pool=plan.spec.pool)

    def warm_up(self) -> None:
        """Resolve the cluster and its subnets before the first gang, so it pays no
        discovery round trips and a broken cloud setup shows at start-up."""
        self._resolver.discover()

    def find(self, *, pool: str, generation: int) -> tuple[Instance, ...]:
        return self._inv.find_group(pool=pool, generation=generation)

    def describe(self, instance_ids: Sequence[str]) -> tuple[Instance, ...]:
        return self._inv.describe(instance_ids)

    def describe_later(self, instance_ids: Sequence[str]) -> Future[tuple[Instance, ...]]:
        return self._inv.describe_later(instance_ids)

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        result = self._releaser.release(request)
        if request.instance_type and result.terminated:
            self._cells.released(request.instance_type)
        return result

    def terminate(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        return self._inv.terminate(instance_ids) if instance_ids else ()

    def tag(self, instance_ids: Sequence[str], tags: Mapping[str, str]) -> None:
        if instance_ids:
            self._inv.tag(instance_ids, tags)

    def list_owned(self) -> tuple[Instance, ...]:
        return self._inv.list_owned()

    def recover_enis(self) -> tuple[str, ...]:
        ended = [i.instance_id for i in self._inv.list_ended()]
        return tuple(sorted(self._releaser.recover(ended, self.config.cluster)))

    def forget_pool(self, pool: str) -> None:
        self._templates.delete_for_pool(cluster=self.config.cluster, pool=pool)

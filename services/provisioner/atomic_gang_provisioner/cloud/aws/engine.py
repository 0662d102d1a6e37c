"""``Ec2Provider``: the boto3 implementation of every cloud role (``cloud.roles``).

It wires the resolver (cluster, subnets, AMI, profile, EFA checks), the
launch-template manager, the placement groups, the reservation book, the planner
and acquirer, the releaser, the inventory and the topology reader around one
retrying caller and one API budget (token buckets per EC2 action class), with
batched describes, terminations and tags. Clock, monotonic time and sleeper are
injected for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from atomic_gang import GangSpec
from atomic_gang_provisioner.cloud.aws.access import AwsAuthReader
from atomic_gang_provisioner.cloud.aws.acquire import Acquirer, failure
from atomic_gang_provisioner.cloud.aws.batch import Ec2Batches
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.cluster import Resolver
from atomic_gang_provisioner.cloud.aws.inventory import Inventory
from atomic_gang_provisioner.cloud.aws.launch_turns import Turns
from atomic_gang_provisioner.cloud.aws.observed import Observations
from atomic_gang_provisioner.cloud.aws.placement import UNKNOWN as UNKNOWN_GROUP
from atomic_gang_provisioner.cloud.aws.placement import PlacementGroups
from atomic_gang_provisioner.cloud.aws.planner import Planner
from atomic_gang_provisioner.cloud.aws.release import Releaser
from atomic_gang_provisioner.cloud.aws.reservation_book import ReservationBook, SawReservation
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.aws.templates import Templates
from atomic_gang_provisioner.cloud.aws.topology_reader import TopologyReader
from atomic_gang_provisioner.cloud.batcher import Windows
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.retry import Backoff, Sleeper, real_sleeper
from atomic_gang_provisioner.cloud.turns.budget import ApiBudget, BudgetLimits
from atomic_gang_provisioner.cloud.turns.launchgate import LaunchGate
from atomic_gang_provisioner.cloud.turns.short_cells import (
    DEFAULT_TTL_SECONDS,
    OWED_AFTER_SECONDS,
    ShortCells,
)
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    Instance,
    Launched,
    PermanentFailure,
    PlacementGroup,
    ReleaseRequest,
    ReleaseResult,
    RetryLater,
    TopologyRead,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    cluster: str
    backoff: Backoff = field(default_factory=Backoff)
    cache_ttl_seconds: float = 600.0
    # DescribeCapacityReservations answers: short, since available counts move.
    reservation_ttl_seconds: float = 10.0
    eni_wait_seconds: float = 60.0
    eni_poll_seconds: float = 2.0
    # iam.selfManageInstanceProfile: create the convention-named profile when missing.
    self_manage_instance_profile: bool = False
    limits: BudgetLimits = field(default_factory=BudgetLimits)
    batch: Windows = field(default_factory=Windows)
    capacity_ttl_seconds: float = DEFAULT_TTL_SECONDS
    capacity_owed_after_seconds: float = OWED_AFTER_SECONDS
    # A shape's shared launch template unused this long is deleted by the reaper.
    template_idle_seconds: float = 3600.0
    # A join check takes a DescribeInstances answer (any pool's call) this recent.
    describe_reuse_seconds: float = 10.0


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
        on_call: Callable[[str, str], None] | None = None,
        aws_auth: AwsAuthReader | None = None,
        on_reservation: SawReservation | None = None,
    ) -> None:
        self.config = config
        self._clients = clients
        self._budget = ApiBudget(limits=config.limits, clock=monotonic)
        self._caller = Caller(
            backoff=config.backoff, sleeper=sleeper, on_call=on_call, budget=self._budget
        )
        self._resolver = Resolver(
            clients=clients,
            caller=self._caller,
            cluster=config.cluster,
            monotonic=monotonic,
            ttl_seconds=config.cache_ttl_seconds,
            self_manage_profile=config.self_manage_instance_profile,
            aws_auth=aws_auth,
        )
        self._templates = Templates(clients=clients, caller=self._caller, monotonic=monotonic)
        self._groups = PlacementGroups(clients=clients, caller=self._caller, cluster=config.cluster)
        self._wire_reads(monotonic)
        self._wire_launches(wall=wall, monotonic=monotonic, on_reservation=on_reservation)
        self._releaser = Releaser(
            clients=clients,
            caller=self._caller,
            cluster=config.cluster,
            inventory=self._inv,
            sleeper=sleeper,
            monotonic=monotonic,
            wait_seconds=config.eni_wait_seconds,
            poll_seconds=config.eni_poll_seconds,
        )

    def _wire_reads(self, monotonic: Callable[[], float]) -> None:
        """The batched, shared reads: topology, and describes by ids (with the answers
        a join check may reuse)."""
        config, clients = self.config, self._clients
        self._topology = TopologyReader(
            clients=clients, caller=self._caller, monotonic=monotonic, windows=config.batch
        )
        seen = Observations(monotonic=monotonic, reuse_seconds=config.describe_reuse_seconds)
        batches = Ec2Batches(ec2=clients.ec2, caller=self._caller, windows=config.batch, seen=seen)
        self._inv = Inventory(
            clients=clients, caller=self._caller, cluster=config.cluster, batches=batches
        )

    def _wire_launches(
        self,
        *,
        wall: Callable[[], datetime],
        monotonic: Callable[[], float],
        on_reservation: SawReservation | None,
    ) -> None:
        """The launch side: the acquirer, the reservation book, whose turn it is, and the
        planner over them."""
        clients, config = self._clients, self.config
        self._turns = Turns(
            # Wall time: a cell's line ages its pools by their acquiringSince.
            cells=ShortCells(
                clock=lambda: wall().timestamp(),
                ttl_seconds=config.capacity_ttl_seconds,
                owed_after_seconds=config.capacity_owed_after_seconds,
            ),
            gate=LaunchGate(budget=self._budget, clock=monotonic),
        )
        self._acquirer = Acquirer(
            clients=clients,
            caller=self._caller,
            inventory=self._inv,
            templates=self._templates,
            wall=wall,
        )
        self._book = ReservationBook(
            ec2=clients.ec2,
            caller=self._caller,
            monotonic=monotonic,
            wall=wall,
            ttl_seconds=config.reservation_ttl_seconds,
            on_read=on_reservation,
        )
        self._planner = Planner(
            cluster=config.cluster,
            resolver=self._resolver,
            templates=self._templates,
            groups=self._groups,
            acquirer=self._acquirer,
            book=self._book,
            turns=self._turns,
            wall=wall,
        )

    def acquire(self, request: AcquireRequest) -> AcquireResult:
        try:
            adopted = self._acquirer.adopt(request) if request.adopt else None
            if isinstance(adopted, Launched):
                return self._planner.with_reservation(adopted)
            if adopted is not None:
                return adopted
            result = self._planner.acquire(request)
        except CloudError as err:
            return failure(err)
        return self._own_group_gone(request.spec, result)

    def _own_group_gone(self, spec: GangSpec, result: AcquireResult) -> AcquireResult:
        """Our own group deleted under us (the reaper, between its create and this launch,
        with a stale view of the pools): make it again next time, do not reject the Job."""
        own = spec.placement is not None and not spec.placement_group_name
        if own and isinstance(result, PermanentFailure) and result.code == UNKNOWN_GROUP:
            self._groups.forget(spec.pool)
            return RetryLater(code=result.code, message=result.message)
        return result

    def warm_up(self) -> None:
        """Resolve the cluster and its subnets before the first gang, so it pays no
        discovery round trips and a broken cloud setup shows at start-up."""
        self._resolver.discover()

    def find(self, *, pool: str, generation: int) -> tuple[Instance, ...]:
        return self._inv.find_group(pool=pool, generation=generation)

    def describe_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = (), reuse: bool = False
    ) -> Future[tuple[Instance, ...]]:
        return self._inv.describe_later(instance_ids, also=also, reuse=reuse)

    def reported_unhealthy(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        return self._inv.reported_unhealthy(instance_ids)

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        result = self._releaser.release(request)
        if not result.terminated:
            return result
        return replace(result, room_for=self._turns.released(result.terminated))

    def tag(self, instance_ids: Sequence[str], tags: Mapping[str, str]) -> None:
        if instance_ids:
            self._inv.tag(instance_ids, tags)

    def list_owned(self) -> tuple[Instance, ...]:
        return self._inv.list_owned()

    def recover_enis(self) -> tuple[str, ...]:
        ended = [i.instance_id for i in self._inv.list_ended()]
        return tuple(sorted(self._releaser.recover(ended)))

    def forget_pool(self, pool: str) -> None:
        self._templates.delete_for_pool(cluster=self.config.cluster, pool=pool)

    def prune_templates(self) -> tuple[str, ...]:
        """Shared launch templates no launch has used for an hour, deleted (names)."""
        return tuple(
            self._templates.prune_shared(
                cluster=self.config.cluster, idle_seconds=self.config.template_idle_seconds
            )
        )

    def delete_placement_group(self, pool: str) -> bool:
        """The pool's own group deleted (call once its instances are gone): True when it
        is gone, False while EC2 still counts instances in it (ask again later)."""
        return self._groups.delete(self._groups.name_for(pool))

    def list_placement_groups(self) -> tuple[PlacementGroup, ...]:
        """This cluster's managed placement groups, for the reaper."""
        return self._groups.list_owned()

    def reap_placement_group(self, name: str) -> bool:
        """Delete a managed group by name (one whose pool is gone); as delete_placement_group."""
        return self._groups.delete(name)

    def read_topology_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = ()
    ) -> Future[TopologyRead]:
        """Network nodes of these instances: a limited, cached, batched
        DescribeInstanceTopology (``also``: ids asked along while a call has room)."""
        return self._topology.read_later(instance_ids, also=also)

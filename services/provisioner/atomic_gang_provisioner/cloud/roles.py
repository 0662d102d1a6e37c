"""The cloud boundary, one Protocol per caller.

``Launcher``: what a pool's reconcile changes in EC2. ``Observer``: what it reads of
EC2 before it decides (each answer fills a field of ``pool.model.Observed``).
``Janitor``: what the reaper sweeps with. ``Cloud``: all three plus the start-up
warm-up, as the manager receives the engine (``cloud.aws.Ec2Provider``).

Every call is safe to make again after a crash: ``acquire`` with the same (pool,
generation) adopts instead of launching twice, ``release`` of released instances is
a no-op, ``tag`` overwrites. Results are our own frozen types, never boto3 dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Protocol

from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    Instance,
    PlacementGroup,
    ReleaseRequest,
    ReleaseResult,
    TopologyRead,
)


class Launcher(Protocol):
    """A pool's reconcile: launch its gang, tag it, release it, then delete what the
    pool alone used (its placement group, its launch templates)."""

    def acquire(self, request: AcquireRequest) -> AcquireResult:
        """N-or-0. Adopts a set launched earlier for this (pool, generation)."""
        ...

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        """Record stray ENIs, terminate, delete fleets, then delete detached ENIs."""
        ...

    def tag(self, instance_ids: Sequence[str], tags: Mapping[str, str]) -> None:
        """Overwrite tags, e.g. KeepWarmUntil (an empty value clears it)."""
        ...

    def delete_placement_group(self, pool: str) -> bool:
        """Delete the pool's own placement group (once its instances are gone): True
        when it is gone, False while EC2 still counts instances in it."""
        ...

    def forget_pool(self, pool: str) -> None:
        """Delete the pool's launch templates (after its instances are gone)."""
        ...


class Observer(Protocol):
    """A pool's reconcile, before it decides: its set as EC2 sees it. The reads made
    while gangs join are shared: one call answers every pool that asks within the
    batch window."""

    def find(self, *, pool: str, generation: int) -> tuple[Instance, ...]:
        """Live instances tagged with (pool, generation), launching nothing: how a set
        whose launch response was lost is found when its claim is gone."""
        ...

    def describe_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = (), reuse: bool = False
    ) -> Future[tuple[Instance, ...]]:
        """The instances' current state, without waiting (unknown ids are simply
        absent): the call is shared with every other pool that asks within the batch
        window, and the Future carries this caller's answer. ``also``: ids other pools
        will ask about soon, asked along while the call has room. ``reuse``: an answer
        EC2 gave for every id (to any pool's call) within
        ``ec2Api.describeReuseSeconds`` will do, without a call."""
        ...

    def reported_unhealthy(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        """Of these, the ids EC2's latest answer to any describe of ours (recorded, no
        call) says are not pending or running."""
        ...

    def read_topology_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = ()
    ) -> Future[TopologyRead]:
        """The instances' network nodes: a limited, cached DescribeInstanceTopology shared
        with every gang that asks within the batch window (at once when all cached);
        ``also``: other gangs' ids, asked along while a call has room."""
        ...


class Janitor(Protocol):
    """The reaper: list what this cluster owns in EC2, release what no pool accounts
    for, and clean up what earlier releases and pools left behind."""

    def list_owned(self) -> tuple[Instance, ...]:
        """This cluster's live managed instances: one paginated, filtered listing."""
        ...

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        """As ``Launcher.release``: the reaper takes the same ENI-aware path."""
        ...

    def recover_enis(self) -> tuple[str, ...]:
        """ENIs an earlier release may have left to delete, found again from EC2: VPC
        CNI ENIs of this cluster's shutting-down or terminated managed instances (EC2
        lists those for about an hour), ENIs still attached to them without
        DeleteOnTermination, and detached ENIs carrying our tags."""
        ...

    def list_placement_groups(self) -> tuple[PlacementGroup, ...]:
        """This cluster's managed placement groups."""
        ...

    def reap_placement_group(self, name: str) -> bool:
        """Delete a managed placement group by name; as ``Launcher.delete_placement_group``."""
        ...

    def prune_templates(self) -> tuple[str, ...]:
        """Delete the shared (per-shape) launch templates no launch has used for a
        while; return their names."""
        ...


class Cloud(Launcher, Observer, Janitor, Protocol):
    """The whole engine, as the manager receives it and hands out its roles."""

    def warm_up(self) -> None:
        """Resolve the cluster and its subnets: at start-up, before the first gang, and
        then as the reaper's cluster probe while that fails."""
        ...

"""The narrow cloud boundary the pool state machine calls.

Every method is safe to call again after a crash: ``acquire`` with the same
(pool, generation) adopts instead of launching twice, ``release`` of released
instances is a no-op, ``tag`` overwrites. Results are our own frozen types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Protocol

from atomic_gang_provisioner.cloud.types import (
    AcquireRequest,
    AcquireResult,
    Instance,
    PlacementGroup,
    ReleaseRequest,
    ReleaseResult,
    TopologyRead,
)


class CloudProvider(Protocol):
    def acquire(self, request: AcquireRequest) -> AcquireResult:
        """N-or-0. Adopts a set launched earlier for this (pool, generation)."""
        ...

    def find(self, *, pool: str, generation: int) -> tuple[Instance, ...]:
        """Live instances tagged with (pool, generation), launching nothing: how a set
        whose launch response was lost is found when its claim is gone."""
        ...

    def describe(self, instance_ids: Sequence[str]) -> tuple[Instance, ...]:
        """Current state of these instances; unknown ids are simply absent."""
        ...

    def describe_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = (), reuse: bool = False
    ) -> Future[tuple[Instance, ...]]:
        """``describe`` without waiting: the call is shared with every other pool that
        asks within the batch window, and the Future carries this caller's answer.
        ``also``: ids other pools will ask about soon, asked along while the call has
        room. ``reuse``: an answer EC2 gave for every id (to any pool's call) within
        ``ec2Api.describeReuseSeconds`` will do, without a call."""
        ...

    def reported_unhealthy(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        """Of these, the ids EC2's latest answer to any describe of ours (recorded, no
        call) says are not pending or running."""
        ...

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        """Record stray ENIs, terminate, delete fleets, then delete detached ENIs."""
        ...

    def terminate(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        """Terminate managed instances (the reaper's hammer); returns those terminated."""
        ...

    def tag(self, instance_ids: Sequence[str], tags: Mapping[str, str]) -> None:
        """Overwrite tags, e.g. KeepWarmUntil (an empty value clears it)."""
        ...

    def list_owned(self) -> tuple[Instance, ...]:
        """This cluster's live managed instances: one paginated, filtered listing."""
        ...

    def forget_pool(self, pool: str) -> None:
        """Delete the pool's launch templates (after its instances are gone)."""
        ...

    def prune_templates(self) -> tuple[str, ...]:
        """Delete the shared (per-shape) launch templates no launch has used for a
        while; return their names."""
        ...

    def recover_enis(self) -> tuple[str, ...]:
        """ENIs an earlier release may have left to delete, found again from EC2: VPC
        CNI ENIs of this cluster's shutting-down or terminated managed instances (EC2
        lists those for about an hour), ENIs still attached to them without
        DeleteOnTermination, and detached ENIs carrying our tags."""
        ...

    def delete_placement_group(self, pool: str) -> bool:
        """Delete the pool's own placement group (once its instances are gone): True
        when it is gone, False while EC2 still counts instances in it."""
        ...

    def list_placement_groups(self) -> tuple[PlacementGroup, ...]:
        """This cluster's managed placement groups (the reaper's listing)."""
        ...

    def reap_placement_group(self, name: str) -> bool:
        """Delete a managed placement group by name; as delete_placement_group."""
        ...

    def read_topology_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = ()
    ) -> Future[TopologyRead]:
        """The instances' network nodes: a limited, cached DescribeInstanceTopology shared
        with every gang that asks within the batch window (at once when all cached);
        ``also``: other gangs' ids, asked along while a call has room."""
        ...

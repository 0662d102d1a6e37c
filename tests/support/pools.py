"""Builders for GangNodePool objects, nodes and instances in unit tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from atomic_gang_provisioner.api import (
    Claim,
    GangNodePool,
    GangNodePoolSpec,
    GangNodePoolStatus,
    PoolShape,
)
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    Instance,
    ReleaseRequest,
    ReleaseResult,
    TopologyRead,
)
from atomic_gang_provisioner.pool import machine, report
from atomic_gang_provisioner.pool.driver import PARKED, Decision, drive
from atomic_gang_provisioner.pool.model import Knobs, NodeView, Observed, with_status
from atomic_gang_provisioner.pool.story import (
    Ask,
    DeleteGroup,
    Describe,
    FindByTag,
    Launch,
    ReadTopology,
    ReadTopologyAhead,
    Terminate,
)

T0 = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
KNOBS = Knobs(
    cluster="my-eks-cluster",
    join_deadline=timedelta(seconds=600),
    attempts_before_retry=3,
    backoff_base=5,
    backoff_max=60,
    health_grace=timedelta(seconds=60),
)
SHAPE = PoolShape(
    count=4,
    instanceType="p4d.24xlarge",
    mode="runinstances",
    region="us-east-1",
    availabilityZones=["us-east-1a"],
    nodeRoleArn="arn:aws:iam::123456789012:role/eks-gang-node-role",
    maxLifetime="6h",
    amiVariant="nvidia",
)
CLAIM = Claim(namespace="default", name="job-a-1", uid="uid-a", claimedAt=T0)
KEY = CLAIM.key
IDS = ["i-0000000000000001", "i-0000000000000002", "i-0000000000000003", "i-0000000000000004"]


def pool(
    *,
    claim: Claim | None = CLAIM,
    keep_warm: str = "15m",
    deleting: bool = False,
    generation: int = 1,
    repair: Literal["auto", "never"] | None = None,
    owner: str | None = "default",
    **status: Any,
) -> GangNodePool:
    meta: dict[str, Any] = {
        "name": "pretrain",
        "generation": generation,
        "uid": "pool-uid",
        "resourceVersion": "7",
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T12:00:00Z"
    return GangNodePool(
        metadata=meta,
        spec=GangNodePoolSpec(
            shape=SHAPE, ownerNamespace=owner, keepWarmTTL=keep_warm, claim=claim, repair=repair
        ),
        status=GangNodePoolStatus.model_validate(status),
    )


def reported(p: GangNodePool) -> GangNodePool:
    """``p`` with the conditions the pool reconciler writes along with its status."""
    return with_status(p, report.refresh(p, p.status, knobs=KNOBS, now=T0))


def launched(*, repair: Literal["auto", "never"] | None = None, **status: Any) -> GangNodePool:
    base: dict[str, Any] = {
        "phase": "Joining",
        "instanceIds": list(IDS),
        "activeGeneration": 1,
        "acquireGeneration": 2,
        "activeGroup": naming.group_id(pool="pretrain", generation=1),
        "launchedAt": T0,
        "joinDeadline": T0 + timedelta(seconds=600),
        "claimKey": KEY,
        "acquiringSince": T0 - timedelta(seconds=5),
        "zones": ["us-east-1a"],
    }
    base.update(status)
    return pool(repair=repair, **base)


def nodes(
    n: int,
    *,
    ready: bool = True,
    group: str | None = None,
    since: datetime | None = None,
    devices: tuple[tuple[str, int], ...] = (),
) -> tuple[NodeView, ...]:
    g = group or naming.group_id(pool="pretrain", generation=1)
    return tuple(
        NodeView(
            name=f"ip-10-0-0-{i}",
            instance_id=IDS[i],
            ready=ready,
            ready_since=since,
            pool="pretrain",
            group=g,
            devices=devices,
        )
        for i in range(n)
    )


def instances(state: str = "running", *, dead: int = 0) -> tuple[Instance, ...]:
    return tuple(
        Instance(
            instance_id=iid,
            state="terminated" if i < dead else state,
            availability_zone="us-east-1a",
            instance_type="p4d.24xlarge",
            launch_time=T0,
        )
        for i, iid in enumerate(IDS)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    """What a phase test shows a pool's story: what the caches hold, and EC2's answers to
    its asks. An ask without an answer here parks the story (``Decision.parked``) on it."""

    nodes: tuple[NodeView, ...] = ()
    reported_unhealthy: tuple[str, ...] = ()
    progress_written_at: datetime | None = None
    knobs: Knobs = KNOBS
    instances: tuple[Instance, ...] | None = None  # answers Describe
    found: tuple[Instance, ...] | None = None  # answers FindByTag
    topology: TopologyRead | None = None  # answers ReadTopology (and a read ahead)
    launch: AcquireResult | None = None  # answers Launch
    release: ReleaseResult | None = None  # answers Terminate
    group_deleted: bool | None = None  # answers DeleteGroup

    def observed(self) -> Observed:
        return Observed(
            nodes=self.nodes,
            reported_unhealthy=self.reported_unhealthy,
            progress_written_at=self.progress_written_at,
            knobs=self.knobs,
        )

    def answer(self, question: Ask[Any]) -> object:
        match question:
            case Describe():
                got: object = self.instances
            case FindByTag():
                got = self.found
            case ReadTopology():
                got = self.topology
            case ReadTopologyAhead():
                return self.topology  # answered at once, whatever the cache holds
            case Launch():
                got = self.launch
            case Terminate():
                got = self.release
            case DeleteGroup():
                got = self.group_deleted
            case _:
                raise AssertionError(f"unexpected ask {question!r}")
        return PARKED if got is None else got


def observed(
    node_views: tuple[NodeView, ...] = (), insts: tuple[Instance, ...] | None = None
) -> World:
    return World(nodes=node_views, instances=insts)


def decide(p: GangNodePool, world: World, now: datetime) -> Decision:
    """``p``'s story told against ``world``, to the decision the reconciler would write."""
    story = machine.story(p, world.observed(), now)
    return drive(p, story, world.answer, now=now, knobs=world.knobs)


def launch_asked(decision: Decision) -> AcquireRequest | None:
    """The launch the story asks to make now (None: none, or held for the write-ahead)."""
    asked = decision.waiting_on
    return asked.request if decision.parked and isinstance(asked, Launch) else None


def release_asked(decision: Decision) -> ReleaseRequest | None:
    """The release the story asks to make now (None: none, or held for the write-ahead)."""
    asked = decision.waiting_on
    return asked.request if decision.parked and isinstance(asked, Terminate) else None

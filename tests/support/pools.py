"""Builders for GangNodePool objects, nodes and instances in unit tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from atomic_gang_provisioner.api import (
    Claim,
    GangNodePool,
    GangNodePoolSpec,
    GangNodePoolStatus,
    PoolShape,
)
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.types import Instance
from atomic_gang_provisioner.pool import report
from atomic_gang_provisioner.pool.model import Knobs, NodeView, Observed, with_status

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
        spec=GangNodePoolSpec(shape=SHAPE, keepWarmTTL=keep_warm, claim=claim),
        status=GangNodePoolStatus.model_validate(status),
    )


def reported(p: GangNodePool) -> GangNodePool:
    """``p`` with the conditions the pool reconciler writes along with its status."""
    return with_status(p, report.refresh(p, p.status, knobs=KNOBS, now=T0))


def launched(**status: Any) -> GangNodePool:
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
    }
    base.update(status)
    return pool(**base)


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


def observed(
    node_views: tuple[NodeView, ...] = (), insts: tuple[Instance, ...] | None = None
) -> Observed:
    return Observed(nodes=node_views, instances=insts, knobs=KNOBS)

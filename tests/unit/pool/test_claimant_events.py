"""Pool transitions are recorded on the pool and on the claimant's Workload and
Job, once per transition (the pool reconciler emits each event exactly once)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.views.node import INSTANCE_INDEX, instance_index
from atomic_gang_provisioner.views.pool_object import POOL_INDEXERS
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import CLAIM, T0, launched


class Refs:
    """An event sink that keeps which object (kind, name, uid) got which reason."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str, str]] = []

    def event(self, obj: Any, *, type: str, reason: str, message: str) -> None:
        m = obj["metadata"]
        self.seen.append((obj["kind"], m["name"], m.get("uid", ""), reason, message))


def workload() -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": CLAIM.namespace,
            "name": CLAIM.name,
            "uid": CLAIM.uid,
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "job-a", "uid": "job-uid"}
            ],
        }
    }


def reconcile(
    pool_obj: dict[str, Any], workloads: list[dict[str, Any]], cloud: FakeCloud | None = None
) -> Refs:
    refs = Refs()
    ctx = context(
        settings=settings(),
        transport=RecordingTransport(),
        pools=FakeCache([pool_obj], POOL_INDEXERS),
        workloads=FakeCache(workloads),
        now=lambda: T0 + timedelta(seconds=601),  # past the join deadline
    )
    nodes = FakeCache([], {INSTANCE_INDEX: instance_index})
    ctx = replace(ctx, events=refs, nodes=nodes, launcher=cloud or FakeCloud.unused())
    PoolReconciler(ctx).reconcile("pretrain")
    return refs


def test_a_transition_is_recorded_on_the_pool_the_workload_and_the_job() -> None:
    refs = reconcile(launched().to_dict(), [workload()])
    got = [(kind, name, uid, reason) for kind, name, uid, reason, _ in refs.seen]
    assert got == [
        ("GangNodePool", "pretrain", "pool-uid", "JoinTimeout"),
        ("Workload", CLAIM.name, CLAIM.uid, "JoinTimeout"),
        ("Job", "job-a", "job-uid", "JoinTimeout"),
    ]
    assert refs.seen[2][4].startswith("Pool pretrain: Only 0/4 nodes became Ready")


def test_without_the_workload_in_cache_only_the_workload_reference_gets_it() -> None:
    refs = reconcile(launched().to_dict(), [])
    assert [kind for kind, *_ in refs.seen] == ["GangNodePool", "Workload"]


def test_an_unclaimed_pool_records_on_itself_only() -> None:
    p = launched(claimKey="")
    p = p.model_copy(update={"spec": p.spec.model_copy(update={"claim": None})})
    refs = reconcile(p.to_dict(), [workload()])
    assert [(kind, reason) for kind, _, _, reason, _ in refs.seen] == [
        ("GangNodePool", "JoinTimeout")
    ]


def test_the_write_ahead_finish_records_released_not_the_cause_again() -> None:
    stored = launched(phase="Releasing", lastErrorReason="JoinTimeout").to_dict()
    refs = reconcile(stored, [workload()], cloud=FakeCloud.unused("release"))
    assert [(kind, reason) for kind, _, _, reason, _ in refs.seen] == [
        ("GangNodePool", "Released"),
        ("Workload", "Released"),
        ("Job", "Released"),
    ]

"""GangNodePool reconciler: tell the pool's story, answering what it asks, then apply its
effects and write its status once.

The reconcile key is the pool name, so a pool is never reconciled by two
workers at once (the anti-double-acquire guarantee on top of ClientTokens).
A describe never holds a worker: the reconcile hands its ids to the batched
DescribeInstances and ends (``driver.PARKED``); the answer requeues the pool, whose
next reconcile tells the story again and finds it (so Node events of other pools never
queue behind EC2).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from atomic_gang import keys
from atomic_gang.resources import KUEUE_API, NODES, POOLS
from atomic_gang_provisioner.api import FINALIZER, GangNodePool
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    ReleaseRequest,
    ReleaseResult,
    RetryLater,
    Waiting,
)
from atomic_gang_provisioner.kube.api_errors import ConflictError, KubeError, NotFoundError
from atomic_gang_provisioner.nodes import node_view, slim_node
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.driver import PARKED, Decision, drive
from atomic_gang_provisioner.pool.model import NodeView, Observed
from atomic_gang_provisioner.pool.outcomes import (
    Acquisition,
    Announcement,
    BlockWait,
    InstancesReleased,
    JoinDuration,
    KeepWarmReuse,
    KeptInstanceSeconds,
    Metric,
    RepairCounted,
    RepairDuration,
    ShortfallCounted,
    Spread,
    TimeToSatisfied,
)
from atomic_gang_provisioner.pool.story import (
    Ask,
    DeleteGroup,
    Describe,
    FindByTag,
    LabelNodes,
    Launch,
    NodeLabels,
    ReadTopology,
    ReadTopologyAhead,
    TagInstances,
    TaintNodes,
    Terminate,
)
from atomic_gang_provisioner.reconcilers.context import Context
from atomic_gang_provisioner.reconcilers.latest import LatestWrites
from atomic_gang_provisioner.reconcilers.memory import PoolMemory
from atomic_gang_provisioner.reconcilers.reads import PoolReads
from atomic_gang_provisioner.runtime import Result
from atomic_gang_provisioner.views.node import INSTANCE_INDEX
from atomic_gang_provisioner.views.pool_object import PoolObject
from atomic_gang_provisioner.workload.view import view

log = logging.getLogger("atomic_gang_provisioner.pool")
LABEL_WRITERS = 8  # a gang's Node label patches go out side by side


def launched_nothing(result: AcquireResult) -> bool:
    """EC2 processed no launch: the generation stays one no set can exist at."""
    return isinstance(result, Waiting) or (
        isinstance(result, RetryLater) and result.launched_nothing
    )


class PoolReconciler:
    def __init__(
        self,
        ctx: Context,
        *,
        requeue: Callable[[str], None] | None = None,
        latest: LatestWrites | None = None,
        claimant_changed: Callable[[str, str], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self._reads = PoolReads(ctx, requeue=requeue)
        self._requeue = requeue
        self.latest = latest or LatestWrites(ctx.pools)
        # Our label patches, before the watch brings them.
        self._labeled = LatestWrites(ctx.nodes, slim=slim_node)
        # Told each status write's claimant (namespace/name) and the phase written, at
        # once: the Workload side reads the pool from ``latest`` and need not wait for
        # the watch.
        self._claimant_changed = claimant_changed
        self.memory = PoolMemory()
        self._labelers = ThreadPoolExecutor(LABEL_WRITERS, thread_name_prefix="node-labels")

    def _nodes(self, pool: GangNodePool) -> tuple[NodeView, ...]:
        out: list[NodeView] = []
        for iid in pool.status.instanceIds:
            for node in self.ctx.nodes.by_index(INSTANCE_INDEX, iid):
                view = node_view(self._labeled.newer(node))
                if view is not None:
                    out.append(view)
        return tuple(out)

    def reconcile(self, name: str) -> Result:
        obj = self.latest.newest(name)
        if obj is None:
            return Result()
        pool = GangNodePool.from_dict(obj)
        decision = self._tell(pool)
        if decision.parked:
            return Result()  # the answer requeues the pool
        self._apply(pool, decision)
        try:
            self._write(pool, decision)
        except ConflictError as err:
            log.info("pool write conflicted; retrying", extra={"pool": name, "error": str(err)})
            return Result(requeue=True)
        return Result(requeue_after=decision.requeue_after)

    def _tell(self, pool: GangNodePool) -> Decision:
        """The pool's story, told from what the caches show, its asks answered here."""
        now = self.ctx.now()
        observed = Observed(
            nodes=self._nodes(pool),
            reported_unhealthy=self.ctx.observer.reported_unhealthy(pool.status.instanceIds),
            progress_written_at=self.memory.progress_written_at(pool.name),
            knobs=self.ctx.knobs,
        )
        story = machine.story(pool, observed, now)
        return drive(
            pool, story, lambda q: self._answer(pool.name, q), now=now, knobs=self.ctx.knobs
        )

    def _answer(self, name: str, question: Ask[Any]) -> object:
        """The answer to one ask of the story; PARKED while a batched read is out."""
        match question:
            case Describe(instance_ids=ids, shared=shared):
                described = self._reads.describe(name, ids, shared=shared)
                return PARKED if described is None else described
            case ReadTopology(instance_ids=ids):
                topology = self._reads.topology(name, ids)
                return PARKED if topology is None else topology
            case ReadTopologyAhead(instance_ids=ids):
                return self._reads.warm(name, ids)
            case FindByTag(generation=generation):
                return self.ctx.observer.find(pool=name, generation=generation)
            case Launch(request=request):
                return self._launch(name, request)
            case Terminate(request=release):
                return self._release(release)
            case DeleteGroup():
                self.ctx.must_lead()
                return self.ctx.launcher.delete_placement_group(name)
        raise TypeError(f"a pool's story asked {question!r}, which nothing answers")

    def _launch(self, name: str, asked: AcquireRequest) -> AcquireResult:
        self.ctx.must_lead()
        fresh = self.memory.take_fresh(name, asked.generation)
        also = self._reads.wanted(name) if asked.spec.reservation_ids else ()
        result = self.ctx.launcher.acquire(replace(asked, adopt=not fresh, also_reservations=also))
        self.ctx.faults.after_launch()
        if launched_nothing(result):  # the same ClientToken next time, no lookup
            self.memory.launched_nothing(name, asked.generation)
        return result

    def _release(self, release: ReleaseRequest) -> ReleaseResult:
        self.ctx.must_lead()
        released = self.ctx.launcher.release(release)
        self._wake(released.room_for)
        return released

    def _wake(self, pools: tuple[str, ...]) -> None:
        """The pools in line for the room a release freed ask now, not at their poll."""
        if self._requeue is not None:
            for waiter in pools:
                self._requeue(waiter)

    def _apply(self, pool: GangNodePool, decision: Decision) -> None:
        """The decision's effects, before its status is written (Satisfied waits for them)."""
        for effect in decision.effects:
            match effect:
                case TagInstances(instance_ids=ids, tags=tags) if ids:
                    self.ctx.must_lead()
                    self.ctx.launcher.tag(ids, dict(tags))
                case LabelNodes(nodes=nodes):
                    self._label(pool, nodes)
                case TaintNodes(nodes=names):
                    self.ctx.must_lead()
                    for name in names:
                        self._taint_broken(pool, name)

    def _label(self, pool: GangNodePool, nodes: tuple[NodeLabels, ...]) -> None:
        """The network-node-layer labels a Node lacks, patched side by side: the gang's
        Satisfied waits for them. A label is a hint for schedulers, not part of the gang:
        a Node that refuses it is logged, and the gang goes on."""
        if nodes:
            self.ctx.must_lead()
            list(self._labelers.map(lambda node: self._label_one(pool, node), nodes))

    def _taint_broken(self, pool: GangNodePool, name: str) -> None:
        """``keys.BROKEN_TAINT:NoExecute`` on a broken Node: its pods leave at once and
        none lands there again. Taints are an atomic list: the Node is read and written
        back whole, guarded by its resourceVersion (a conflict reads it again). A Node
        that is gone needs none; one that refuses it is logged (the repair goes on)."""
        for _ in range(3):
            try:
                node = self.ctx.client.get(NODES, name)
                taints = list((node.get("spec") or {}).get("taints") or [])
                if any(t.get("key") == keys.BROKEN_TAINT for t in taints):
                    return
                taints.append({"key": keys.BROKEN_TAINT, "value": pool.name, "effect": "NoExecute"})
                rv = str(node.get("metadata", {}).get("resourceVersion", ""))
                self.ctx.client.patch(
                    NODES, name, {"spec": {"taints": taints}}, resource_version=rv
                )
                return
            except NotFoundError:
                return
            except ConflictError:
                continue
            except KubeError as err:
                log.warning(
                    "broken node taint failed",
                    extra={"pool": pool.name, "node": name, "error": str(err)},
                )
                return

    def _label_one(self, pool: GangNodePool, node: NodeLabels) -> None:
        patch = {"metadata": {"labels": dict(node.labels)}}
        try:
            self._labeled.remember(self.ctx.client.patch(NODES, node.node, patch))
        except KubeError as err:
            log.warning(
                "node label patch failed",
                extra={"pool": pool.name, "node": node.node, "error": str(err)},
            )

    def _write(self, pool: GangNodePool, decision: Decision) -> None:
        ctx = self.ctx
        if decision.status != pool.status:
            ctx.must_lead()
            self._write_status(pool, decision)
            self.memory.written(pool.name, pool.status, decision.status, ctx.now())
        if decision.remove_finalizer:
            # Its own launch templates (fleet mode) go with it, before the object does: a
            # failure keeps the finalizer, and the next reconcile tries again.
            ctx.launcher.forget_pool(pool.name)
            self._remove_finalizer(pool)
        said = [(type(o).__name__, o.announce()) for o in decision.outcomes]
        # The pool and its claimant are read into Event targets only when an outcome
        # has an Event (a metric alone, such as a spread, needs neither).
        told = any(a.event is not None for _, a in said)
        targets = (pool.to_dict(), *self._claimant_objects(pool)) if told else ()
        for kind, announcement in said:
            self._announce(pool, kind, announcement, targets)

    def _announce(
        self,
        pool: GangNodePool,
        kind: str,
        said: Announcement,
        targets: tuple[dict[str, Any], ...],
    ) -> None:
        """One outcome: its Event on the pool (``targets[0]``) and its claimant, its log
        line, its metrics."""
        if said.event is None:
            log.debug(kind, extra={"pool": pool.name, "outcome": kind})
        else:
            ev = said.event
            pool_obj, *claimant = targets
            self.ctx.events.event(pool_obj, type=ev.type, reason=ev.reason, message=ev.message)
            for obj in claimant:
                text = f"Pool {pool.name}: {ev.message}"
                self.ctx.events.event(obj, type=ev.type, reason=ev.reason, message=text)
            extra = {"pool": pool.name, "reason": ev.reason, "outcome": kind}
            log.info(ev.message, extra=extra)
        for metric in said.metrics:
            self._record(metric)

    def _claimant_objects(self, pool: GangNodePool) -> tuple[dict[str, Any], ...]:
        """The claiming Workload and its owner Job or JobSet, so that ``kubectl describe``
        shows the gang's transitions. Each pool event is emitted exactly once, here, so
        the claimant gets one event per transition with no bookkeeping of what was sent."""
        claim = pool.spec.claim
        if claim is None:
            return ()
        meta = {"namespace": claim.namespace, "name": claim.name, "uid": claim.uid}
        out = [{"apiVersion": KUEUE_API, "kind": "Workload", "metadata": meta}]
        wl = self.ctx.workloads.get(f"{claim.namespace}/{claim.name}")
        owner = view(wl).owner if wl is not None else None
        if owner is not None:  # the Job or JobSet: `kubectl describe` it shows the gang
            of = {"namespace": claim.namespace, "name": owner.name, "uid": owner.uid}
            out.append({"apiVersion": owner.api_version, "kind": owner.kind, "metadata": of})
        return tuple(out)

    def _write_status(self, pool: GangNodePool, decision: Decision) -> None:
        # None fields are left out, as to_dict does: kubectl shows a null column as "<no value>".
        status = decision.status.model_dump(mode="json", exclude_none=True)
        try:
            self._remember(
                pool, self.ctx.client.replace_status(POOLS, {**pool.to_dict(), "status": status})
            )
            return
        except ConflictError:
            pass
        # The Workload reconciler changed the spec meanwhile. We are the only status writer,
        # so if the status we started from is still the stored one, write ours on top.
        latest = GangNodePool.from_dict(self.ctx.client.get(POOLS, pool.name))
        if latest.status != pool.status:
            raise ConflictError(f"status of pool {pool.name} changed under us")
        self.ctx.must_lead()
        self._remember(
            pool, self.ctx.client.replace_status(POOLS, {**latest.to_dict(), "status": status})
        )

    def _remember(self, pool: GangNodePool, written: dict[str, Any]) -> None:
        self.latest.remember(written)
        claim = pool.spec.claim
        if claim is not None and self._claimant_changed is not None:
            phase = PoolObject(written).phase
            self._claimant_changed(f"{claim.namespace}/{claim.name}", phase)

    def _remove_finalizer(self, pool: GangNodePool) -> None:
        finalizers = [f for f in pool.metadata.get("finalizers") or [] if f != FINALIZER]
        patch: dict[str, Any] = {"metadata": {"finalizers": finalizers}}
        try:
            self.ctx.client.patch(POOLS, pool.name, patch, resource_version=pool.resource_version)
        except NotFoundError:
            return

    def _record(self, metric: Metric) -> None:
        m = self.ctx.metrics
        match metric:
            case Acquisition(mode=mode, result=result):
                m.acquisitions.labels(mode, result).inc()
            case ShortfallCounted(reason=reason):
                m.shortfalls.labels(reason).inc()
            case TimeToSatisfied(seconds=seconds):
                m.time_to_satisfied.observe(seconds)
            case JoinDuration(seconds=seconds):
                m.join_duration.observe(seconds)
            case KeepWarmReuse():
                m.keep_warm_reuses.inc()
            case InstancesReleased(count=count):
                m.released.inc(count)
            case BlockWait(seconds=seconds):
                m.block_wait.observe(seconds)
            case Spread(pool=name, nodes=nodes):
                m.spread.labels(name).set(nodes)
            case RepairCounted(pool=name, reason=reason, result=result):
                m.repairs.labels(name, reason, result).inc()
            case RepairDuration(seconds=seconds):
                m.repair_duration.observe(seconds)
            case KeptInstanceSeconds(seconds=seconds):
                m.repair_kept_instance_seconds.inc(seconds)

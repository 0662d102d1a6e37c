"""GangNodePool reconciler: decide, perform the one cloud call, write status once.

The reconcile key is the pool name, so a pool is never reconciled by two
workers at once (the anti-double-acquire guarantee on top of ClientTokens).
A describe never holds a worker: the reconcile hands its ids to the batched
DescribeInstances and ends; the answer requeues the pool, whose next reconcile
decides with it (so Node events of other pools never queue behind EC2).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from atomic_gang_provisioner.api import FINALIZER, GangNodePool
from atomic_gang_provisioner.cloud.types import (
    AcquireResult,
    RetryLater,
    Waiting,
)
from atomic_gang_provisioner.kube.errors import ConflictError, KubeError, NotFoundError
from atomic_gang_provisioner.nodes import node_view, slim_node
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.model import (
    DeleteGroup,
    Describe,
    FindByTag,
    Launch,
    NodeLabels,
    NodeView,
    Observed,
    Plan,
    Read,
    ReadTopology,
    Terminate,
)
from atomic_gang_provisioner.pool.outcomes import (
    Acquisition,
    Announcement,
    BlockWait,
    InstancesReleased,
    JoinDuration,
    KeepWarmReuse,
    Metric,
    ShortfallCounted,
    Spread,
    TimeToSatisfied,
)
from atomic_gang_provisioner.reconcilers.context import Context
from atomic_gang_provisioner.reconcilers.latest import LatestWrites
from atomic_gang_provisioner.reconcilers.memory import PoolMemory
from atomic_gang_provisioner.reconcilers.reads import INSTANCE_INDEX, PoolReads
from atomic_gang_provisioner.resources import KUEUE_API, NODES, POOLS
from atomic_gang_provisioner.runtime import Result
from atomic_gang_provisioner.views.pool_object import PoolObject
from atomic_gang_provisioner.workload.view import view

log = logging.getLogger("atomic_gang_provisioner.pool")
LABEL_WRITERS = 8  # a gang's Node label patches go out side by side
# The reads a decision may ask for, in the order a reconcile answers them.
READ_ORDER = (Describe, ReadTopology, FindByTag)


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
        now = self.ctx.now()
        observed = Observed(
            nodes=self._nodes(pool),
            reported_unhealthy=self.ctx.observer.reported_unhealthy(pool.status.instanceIds),
            progress_written_at=self.memory.progress_written_at(name),
            knobs=self.ctx.knobs,
        )
        plan = machine.decide(pool, observed, now)
        if plan.warm_topology and (ahead := self._reads.warm(name, plan.warm_topology)):
            plan = machine.decide(pool, replace(observed, topology=ahead), now)
        for kind in READ_ORDER:  # each read at most once; a later ask waits a reconcile
            if isinstance(plan.read, kind):
                answered = self._answer(pool, plan.read, observed)
                if answered is None:
                    return Result()  # the answer requeues the pool
                observed = answered
                plan = machine.decide(pool, observed, now)
        plan = self._perform(pool, plan)
        try:
            self._write(pool, plan)
        except ConflictError as err:
            log.info("pool write conflicted; retrying", extra={"pool": name, "error": str(err)})
            return Result(requeue=True)
        return Result(requeue_after=plan.requeue_after)

    def _answer(self, pool: GangNodePool, read: Read, observed: Observed) -> Observed | None:
        """``observed`` with the answer to ``read``; None while a batched read is out
        (its answer requeues the pool)."""
        match read:
            case Describe(shared=shared):
                described = self._reads.describe(pool, shared=shared)
                return None if described is None else replace(observed, instances=described)
            case ReadTopology(instance_ids=ids):
                topology = self._reads.topology(pool.name, ids)
                return None if topology is None else replace(observed, topology=topology)
            case FindByTag(generation=generation):
                found = self.ctx.observer.find(pool=pool.name, generation=generation)
                return replace(observed, found=found)

    def _wake(self, pools: tuple[str, ...]) -> None:
        """The pools in line for the room a release freed ask now, not at their poll."""
        if self._requeue is not None:
            for waiter in pools:
                self._requeue(waiter)

    def _perform(self, pool: GangNodePool, plan: Plan) -> Plan:
        ctx = self.ctx
        now = ctx.now()
        if plan.call is not None:
            ctx.must_lead()
        match plan.call:
            case Launch(request=asked):
                fresh = self.memory.take_fresh(pool.name, asked.generation)
                also = self._reads.wanted(pool.name) if asked.spec.reservation_ids else ()
                request = replace(asked, adopt=not fresh, also_reservations=also)
                result = ctx.launcher.acquire(request)
                ctx.faults.after_launch()
                if launched_nothing(result):  # the same ClientToken next time, no lookup
                    self.memory.launched_nothing(pool.name, asked.generation)
                plan = machine.after_acquire(
                    pool, plan, request=asked, result=result, now=now, knobs=ctx.knobs
                )
            case Terminate(request=release):
                released = ctx.launcher.release(release)
                self._wake(released.room_for)
                plan = machine.after_release(pool, plan, result=released, now=now, knobs=ctx.knobs)
            case DeleteGroup():
                deleted = ctx.launcher.delete_placement_group(pool.name)
                plan = machine.after_delete_group(
                    pool, plan, deleted=deleted, knobs=ctx.knobs, now=now
                )
        if plan.tag is not None and plan.tag.instance_ids:
            ctx.must_lead()
            ctx.launcher.tag(plan.tag.instance_ids, dict(plan.tag.tags))
        self._label(pool, plan.label_nodes)
        return plan

    def _label(self, pool: GangNodePool, nodes: tuple[NodeLabels, ...]) -> None:
        """The network-node-layer labels a Node lacks, patched side by side: the gang's
        Satisfied waits for them. A label is a hint for schedulers, not part of the gang:
        a Node that refuses it is logged, and the gang goes on."""
        if nodes:
            self.ctx.must_lead()
            list(self._labelers.map(lambda node: self._label_one(pool, node), nodes))

    def _label_one(self, pool: GangNodePool, node: NodeLabels) -> None:
        patch = {"metadata": {"labels": dict(node.labels)}}
        try:
            self._labeled.remember(self.ctx.client.patch(NODES, node.node, patch))
        except KubeError as err:
            log.warning(
                "node label patch failed",
                extra={"pool": pool.name, "node": node.node, "error": str(err)},
            )

    def _write(self, pool: GangNodePool, plan: Plan) -> None:
        ctx = self.ctx
        if plan.status != pool.status:
            ctx.must_lead()
            self._write_status(pool, plan)
            self.memory.written(pool.name, pool.status, plan.status, ctx.now())
        if plan.remove_finalizer:
            # Its own launch templates (fleet mode) go with it, before the object does: a
            # failure keeps the finalizer, and the next reconcile tries again.
            ctx.launcher.forget_pool(pool.name)
            self._remove_finalizer(pool)
        said = [(type(o).__name__, o.announce()) for o in plan.outcomes]
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

    def _write_status(self, pool: GangNodePool, plan: Plan) -> None:
        # None fields are left out, as to_dict does: kubectl shows a null column as "<no value>".
        status = plan.status.model_dump(mode="json", exclude_none=True)
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

"""Wire caches, queues, reconcilers, the reaper and leader election together.

Informers run on every replica (a warm standby has full caches); the
controllers and the reaper run only while this replica leads. Losing the lease
ends the process at once, as controller-runtime does: no write can follow, and
the next leader resumes from status and ClientTokens.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from atomic_gang_provisioner.caches import WorkloadScope, informers
from atomic_gang_provisioner.cloud.roles import Cloud
from atomic_gang_provisioner.kube import (
    EventRecorder,
    Handlers,
    Informer,
    KubeClient,
    LeaderElectionConfig,
    LeaderElector,
    Resource,
    object_key,
)
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.nodes import node_read_changed
from atomic_gang_provisioner.reconcilers.admission_checks import AdmissionCheckReconciler
from atomic_gang_provisioner.reconcilers.context import Context, Faults
from atomic_gang_provisioner.reconcilers.latest import LatestWrites
from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.reconcilers.reaper import Reaper
from atomic_gang_provisioner.reconcilers.workloads import (
    WorkloadReconciler,
    job_read_changed,
    workload_read_changed,
)
from atomic_gang_provisioner.runtime import Controller, ControllerHooks
from atomic_gang_provisioner.settings import ProvisionerSettings
from atomic_gang_provisioner.views.node import Node
from atomic_gang_provisioner.views.owner import Owner
from atomic_gang_provisioner.views.pool_object import PoolObject
from atomic_gang_provisioner.workload.slim import slim
from atomic_gang_provisioner.workload.view import CHECK_INDEX, OWNER_INDEX

log = logging.getLogger("atomic_gang_provisioner")
COMPONENT = "atomic-gang-provisioner"
# A Workload whose pool has just written Satisfied goes before the other Workloads
# queued, and a worker of its own waits for it: its check Ready is what the gang's
# pods wait for, on nodes already billed.
GANG_READY_PRIORITY = 1
GANG_READY_WORKERS = 2
Obj = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Controllers:
    """The provisioner's controllers: one work queue and its workers each."""

    pool: Controller[str]  # GangNodePools, by name
    workload: Controller[str]  # Workloads, by namespace/name
    admission_check: Controller[str]  # our AdmissionChecks' Active condition, by name

    def __iter__(self) -> Iterator[Controller[str]]:
        return iter((self.pool, self.workload, self.admission_check))


class Manager:
    def __init__(
        self,
        *,
        settings: ProvisionerSettings,
        client: KubeClient,
        cloud: Cloud,
        metrics: ProvisionerMetrics,
        faults: Faults | None = None,
        owners: Collection[Resource] = (),
    ) -> None:
        self.resolved = settings
        self.settings, self.server = settings.gang, settings.server
        self.client, self.metrics = client, metrics
        self.owner_kinds = tuple(owners)
        self.scope = WorkloadScope(self.settings.controller_name)
        self.informers = informers(
            client, resync_seconds=self.server.resync_seconds, scope=self.scope, owners=owners
        )
        self.recorder = EventRecorder(client, component=COMPONENT)
        self.leading = threading.Event()
        self.ctx = self._context(cloud, faults or Faults())
        self.pool_writes = LatestWrites(self.ctx.pools)  # our pool status writes
        self.check_writes = LatestWrites(self.ctx.workloads, slim=slim)  # our check applies
        self.controllers = self._controllers()
        self.reaper = self._reaper(cloud)
        self.elector: LeaderElector | None = None
        self._wire()

    def _context(self, cloud: Cloud, faults: Faults) -> Context:
        i = self.informers
        return Context(
            client=self.client,
            pools=i.pools,
            workloads=i.workloads,
            nodes=i.nodes,
            jobs=i.jobs,
            checks=i.checks,
            flavors=i.flavors,
            launcher=cloud,
            observer=cloud,
            janitor=cloud,
            settings=self.settings,
            knobs=self.resolved.knobs,
            events=self.recorder,
            metrics=self.metrics,
            leading=self._is_leading,
            faults=faults,
            owners=i.owners,
        )

    def _reaper(self, cloud: Cloud) -> Reaper:
        return Reaper(
            self.ctx, interval=float(self.settings.reap_interval_seconds), probe=cloud.warm_up
        )

    def _is_leading(self) -> bool:
        if self.elector is None:
            return self.leading.is_set()
        return self.elector.is_leader()

    def _controller(
        self, name: str, fn: Callable[[str], Any], workers: int, urgent: int = 0
    ) -> Controller[str]:
        m = self.metrics

        def on_error(key: str, err: Exception) -> None:
            m.reconcile_errors.labels(name).inc()
            log.warning(
                "reconcile failed", extra={"controller": name, "key": key, "error": repr(err)}
            )

        def on_done(key: str, seconds: float, ok: bool) -> None:
            m.reconcile_duration.labels(name).observe(seconds)

        def on_picked(key: str, seconds: float) -> None:
            m.queue_wait.labels(name).observe(seconds)

        hooks: ControllerHooks[str] = ControllerHooks(
            on_error=on_error, on_reconciled=on_done, on_picked=on_picked
        )
        c: Controller[str] = Controller(
            name=name, reconcile=fn, max_workers=workers, hooks=hooks, urgent_workers=urgent
        )
        m.queue_depth.labels(name).set_function(c.depth)
        return c

    def _controllers(self) -> Controllers:
        pool_workers = self.resolved.pool_workers
        latest = self.pool_writes  # both sides read our own pool writes at once
        pools = PoolReconciler(
            self.ctx,
            requeue=self._requeue_pool,
            latest=latest,
            claimant_changed=self.on_claimant_changed,
        )
        workloads = WorkloadReconciler(self.ctx, latest=latest, applied=self.check_writes)
        return Controllers(
            pool=self._controller("pool", pools.reconcile, pool_workers),
            workload=self._controller(
                "workload", workloads.reconcile, self.server.workload_workers, GANG_READY_WORKERS
            ),
            admission_check=self._controller(
                "admissioncheck",
                AdmissionCheckReconciler(
                    self.ctx, cloud_error=lambda: self.ctx.cloud_health.error
                ).reconcile,
                1,
            ),
        )

    def _requeue_pool(self, name: str) -> None:
        self.controllers.pool.enqueue(name)

    def on_claimant_changed(self, key: str, phase: str) -> None:
        priority = GANG_READY_PRIORITY if phase == "Satisfied" else 0
        self.controllers.workload.enqueue(key, priority=priority)

    def _wire(self) -> None:
        """Informer events become reconcile keys; handlers only enqueue."""
        i = self.informers
        self.ctx.cloud_health.on_change = self._recheck_checks
        i.pools.add_handlers(_changes(self.on_pool, self.on_pool_update))
        i.workloads.add_handlers(_changes(self.on_workload, self.on_workload_update))
        i.nodes.add_handlers(_changes(self.on_node, self.on_node_update))
        for owner in (i.jobs, *i.owners.values()):  # JobSets, TrainJobs: owners as a Job is
            owner.add_handlers(_changes(self.on_owner, self.on_owner_update))
        i.checks.add_handlers(Handlers.for_all(self.on_check))
        i.checks.add_handlers(Handlers.for_all(self.on_check_names))
        self._wire_observers()

    def _wire_observers(self) -> None:
        """The cost ledger follows every pool version; the pool gauges read the cache."""
        cost = self.metrics.cost
        cost.exporting = self._is_leading
        self.informers.pools.add_handlers(
            Handlers(
                on_add=cost.seen, on_update=lambda _old, new: cost.seen(new), on_delete=cost.gone
            )
        )
        self.metrics.pool_stats.pools = self.informers.pools.list
        self.metrics.pool_stats.exporting = self._is_leading

    def _recheck_checks(self) -> None:
        for check in self.informers.checks.list():
            self.controllers.admission_check.enqueue(object_key(check))

    def on_pool(self, obj: Obj) -> None:
        self.controllers.pool.enqueue(object_key(obj))
        claim = PoolObject(obj).claim
        if claim:
            self.controllers.workload.enqueue(f"{claim['namespace']}/{claim['name']}")

    def on_pool_update(self, old: Obj, new: Obj) -> None:
        """The claimant heard of our own status write when it was made (``claimant_changed``):
        its echo enqueues only the pool, unless the claim moved since the version before
        (a relist can bring both changes as one update)."""
        same_claim = PoolObject(old).claim == PoolObject(new).claim
        if same_claim and self.pool_writes.echoes(old, new):
            if not PoolObject(new).waits_for_launch_budget:  # it set when to ask again
                self.controllers.pool.enqueue(object_key(new))
            return
        self.on_pool(old)
        self.on_pool(new)

    def on_workload(self, obj: Obj) -> None:
        self.controllers.workload.enqueue(object_key(obj))

    def on_workload_update(self, old: Obj, new: Obj) -> None:
        # Not our own apply's echo (already decided on), nor Kueue's status churn.
        if workload_read_changed(old, new) and not self.check_writes.echoes(old, new):
            self.on_workload(new)

    def on_node(self, obj: Obj) -> None:
        pool = Node(obj).pool
        if pool:
            self.controllers.pool.enqueue(str(pool))

    def on_node_update(self, old: Obj, new: Obj) -> None:
        if node_read_changed(old, new):  # not the heartbeats
            self.on_node(old)
            self.on_node(new)

    def on_owner(self, obj: Obj) -> None:
        """A Job or JobSet changed: the Workloads it owns decide again."""
        uid = Owner(obj).uid
        for wl in self.informers.workloads.by_index(OWNER_INDEX, uid):
            self.controllers.workload.enqueue(object_key(wl))

    def on_owner_update(self, old: Obj, new: Obj) -> None:
        if job_read_changed(old, new):  # not the status updates that every pod makes
            self.on_owner(new)

    def on_check(self, obj: Obj) -> None:
        """Only the Workloads that carry this check can decide differently (as Kueue does)."""
        self.controllers.admission_check.enqueue(object_key(obj))
        for wl in self.informers.workloads.by_index(CHECK_INDEX, object_key(obj)):
            self.controllers.workload.enqueue(object_key(wl))

    def on_check_names(self, _obj: Obj) -> None:
        """Our checks' names changed: the Workload cache lists again to keep the
        Workloads that carry the new ones, and drop those of the old."""
        if self.scope.refresh(self.informers.checks.list()):
            self.informers.workloads.relist()

    def synced(self) -> bool:
        return all(inf.has_synced() for inf in self.informers)

    def start(self, *, identity: str | None = None) -> None:
        # The AdmissionChecks first: they say which Workloads the Workload cache keeps.
        caches = self.informers.by_name()
        for name, cache in caches.items():
            cache.start()
            if cache is self.informers.checks:
                self._wait_for_sync(name, cache)
        for name, cache in caches.items():
            self._wait_for_sync(name, cache)
        le = self.settings.leader_election
        if not le.enabled:
            self._started_leading()
            return
        cfg = LeaderElectionConfig.from_settings(
            le, namespace=self.server.namespace, identity=identity
        )
        self.elector = LeaderElector(
            self.client,
            cfg,
            on_started_leading=self._started_leading,
            on_stopped_leading=self._stopped_leading,
        )
        self.elector.start()

    def _wait_for_sync(self, name: str, cache: Informer) -> None:
        if not cache.wait_for_sync(120):
            raise RuntimeError(f"cache {name} did not sync within 120s")

    def _started_leading(self) -> None:
        log.info("started leading; reconcilers on")
        self.leading.set()
        self.metrics.leader.set(1)
        for ctl in self.controllers:
            ctl.start()
        self.reaper.start()

    def _stopped_leading(self) -> None:
        self.metrics.leader.set(0)
        if self.leading.is_set() and not self._stopping:
            log.error("lost the leader lease; exiting so no write can follow")
            os._exit(1)

    _stopping = False

    def stop(self) -> None:
        self._stopping = True
        for ctl in self.controllers:
            ctl.stop(timeout=20)
        self.reaper.stop()
        if self.elector is not None:
            self.elector.stop()  # releases the Lease: the standby takes over at once
        self.recorder.flush(5)
        for inf in self.informers:
            inf.stop()


def _changes(
    added_or_deleted: Callable[[Obj], None], updated: Callable[[Obj, Obj], None]
) -> Handlers:
    """Adds and deletes always enqueue; an update goes through its own filter."""
    return Handlers(on_add=added_or_deleted, on_update=updated, on_delete=added_or_deleted)

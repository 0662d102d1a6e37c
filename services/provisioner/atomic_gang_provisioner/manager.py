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
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from atomic_gang import GangSettings, keys
from atomic_gang_provisioner.cloud.provider import CloudProvider
from atomic_gang_provisioner.config import ServerSettings
from atomic_gang_provisioner.kube import (
    EventRecorder,
    Handlers,
    Informer,
    KubeClient,
    LeaderElectionConfig,
    LeaderElector,
    by_label,
    by_owner_uid,
    object_key,
)
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.nodes import instance_index
from atomic_gang_provisioner.pool.model import Knobs
from atomic_gang_provisioner.reconcilers.admissioncheck import AdmissionCheckReconciler
from atomic_gang_provisioner.reconcilers.context import Context, Faults
from atomic_gang_provisioner.reconcilers.pool import INSTANCE_INDEX, PoolReconciler
from atomic_gang_provisioner.reconcilers.reaper import Reaper
from atomic_gang_provisioner.reconcilers.workload import (
    CLAIM_INDEX,
    JOB_UID_INDEX,
    WorkloadReconciler,
    claim_index,
    job_uid_index,
)
from atomic_gang_provisioner.resources import (
    ADMISSION_CHECKS,
    JOBS,
    NODES,
    POOLS,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from atomic_gang_provisioner.runtime import Controller, ControllerHooks

log = logging.getLogger("atomic_gang_provisioner")
OWNER_INDEX = "owner"
Obj = dict[str, Any]


def knobs(settings: GangSettings) -> Knobs:
    return Knobs(
        cluster=settings.clusterName,
        join_deadline=timedelta(seconds=settings.joinDeadlineSeconds),
        attempts_before_retry=settings.acquireAttemptsBeforeRetry,
        backoff_base=settings.acquireRetry.backoffBaseSeconds,
        backoff_max=settings.acquireRetry.backoffMaxSeconds,
        health_grace=timedelta(seconds=settings.healthGraceSeconds),
    )


class Manager:
    def __init__(
        self,
        *,
        settings: GangSettings,
        server: ServerSettings,
        client: KubeClient,
        cloud: CloudProvider,
        metrics: ProvisionerMetrics,
        faults: Faults | None = None,
    ) -> None:
        self.settings, self.server, self.client, self.metrics = settings, server, client, metrics
        resync = server.resync_seconds
        self.informers = {
            "pools": Informer(
                client, POOLS, indexers={CLAIM_INDEX: claim_index}, resync_seconds=resync
            ),
            "workloads": Informer(
                client,
                WORKLOADS,
                indexers={OWNER_INDEX: by_owner_uid(kind="Job")},
                resync_seconds=resync,
            ),
            "nodes": Informer(
                client,
                NODES,
                indexers={INSTANCE_INDEX: instance_index, "pool": by_label(keys.POOL)},
            ),
            "jobs": Informer(
                client, JOBS, label_selector=keys.POOL, indexers={JOB_UID_INDEX: job_uid_index}
            ),
            "checks": Informer(client, ADMISSION_CHECKS, resync_seconds=resync),
            "flavors": Informer(client, RESOURCE_FLAVORS),
        }
        i = self.informers
        self.recorder = EventRecorder(client, component="atomic-gang-provisioner")
        self.leading = threading.Event()
        self.ctx = Context(
            client=client,
            pools=i["pools"],
            workloads=i["workloads"],
            nodes=i["nodes"],
            jobs=i["jobs"],
            checks=i["checks"],
            flavors=i["flavors"],
            cloud=cloud,
            settings=settings,
            knobs=knobs(settings),
            events=self.recorder,
            metrics=metrics,
            leading=self._is_leading,
            faults=faults or Faults(),
        )
        self.controllers = self._controllers()
        warm_up = getattr(cloud, "warm_up", None)
        self.reaper = Reaper(
            self.ctx,
            interval=float(settings.reapIntervalSeconds),
            probe=warm_up if callable(warm_up) else None,
        )
        self.elector: LeaderElector | None = None
        self._wire()

    def _is_leading(self) -> bool:
        if self.elector is None:
            return self.leading.is_set()
        return self.elector.is_leader()

    def _controller(self, name: str, fn: Callable[[str], Any], workers: int) -> Controller[str]:
        m = self.metrics

        def on_error(key: str, err: Exception) -> None:
            m.reconcile_errors.labels(name).inc()
            log.warning(
                "reconcile failed", extra={"controller": name, "key": key, "error": repr(err)}
            )

        def on_done(key: str, seconds: float, ok: bool) -> None:
            m.reconcile_duration.labels(name).observe(seconds)

        hooks: ControllerHooks[str] = ControllerHooks(on_error=on_error, on_reconciled=on_done)
        c: Controller[str] = Controller(name=name, reconcile=fn, max_workers=workers, hooks=hooks)
        m.queue_depth.labels(name).set_function(c.depth)
        return c

    def _controllers(self) -> dict[str, Controller[str]]:
        pool_workers = self.server.pool_workers or self.settings.maxConcurrentPoolReconciles
        return {
            "pool": self._controller("pool", PoolReconciler(self.ctx).reconcile, pool_workers),
            "workload": self._controller(
                "workload", WorkloadReconciler(self.ctx).reconcile, self.server.workload_workers
            ),
            "admissioncheck": self._controller(
                "admissioncheck",
                AdmissionCheckReconciler(
                    self.ctx, cloud_error=lambda: self.ctx.cloud_health.error
                ).reconcile,
                1,
            ),
        }

    def _wire(self) -> None:
        i, c = self.informers, self.controllers

        def recheck_all() -> None:
            for check in i["checks"].list():
                c["admissioncheck"].enqueue(object_key(check))

        self.ctx.cloud_health.on_change = recheck_all

        def on_pool(obj: Obj) -> None:
            c["pool"].enqueue(object_key(obj))
            claim = (obj.get("spec") or {}).get("claim")
            if claim:
                c["workload"].enqueue(f"{claim['namespace']}/{claim['name']}")

        def on_node(obj: Obj) -> None:
            pool = ((obj.get("metadata") or {}).get("labels") or {}).get(keys.POOL)
            if pool:
                c["pool"].enqueue(str(pool))

        def on_job(obj: Obj) -> None:
            uid = (obj.get("metadata") or {}).get("uid", "")
            for wl in i["workloads"].by_index(OWNER_INDEX, str(uid)):
                c["workload"].enqueue(object_key(wl))

        def on_check(obj: Obj) -> None:
            c["admissioncheck"].enqueue(object_key(obj))
            for wl in i["workloads"].list():
                c["workload"].enqueue(object_key(wl))

        i["pools"].add_handlers(_both(on_pool))
        i["workloads"].add_handlers(
            Handlers.for_all(lambda o: c["workload"].enqueue(object_key(o)))
        )
        i["nodes"].add_handlers(_both(on_node))
        i["jobs"].add_handlers(Handlers.for_all(on_job))
        i["checks"].add_handlers(Handlers.for_all(on_check))

    def synced(self) -> bool:
        return all(inf.has_synced() for inf in self.informers.values())

    def start(self, *, identity: str | None = None) -> None:
        for inf in self.informers.values():
            inf.start()
        for name, inf in self.informers.items():
            if not inf.wait_for_sync(120):
                raise RuntimeError(f"cache {name} did not sync within 120s")
        le = self.settings.leaderElection
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

    def _started_leading(self) -> None:
        log.info("started leading; reconcilers on")
        self.leading.set()
        self.metrics.leader.set(1)
        for ctl in self.controllers.values():
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
        for ctl in self.controllers.values():
            ctl.stop(timeout=20)
        self.reaper.stop()
        if self.elector is not None:
            self.elector.stop()  # releases the Lease: the standby takes over at once
        self.recorder.flush(5)
        for inf in self.informers.values():
            inf.stop()


def _both(fn: Callable[[Obj], None]) -> Handlers:
    """Enqueue for the old and the new object (labels or claims may have moved)."""

    def on_update(old: Obj, new: Obj) -> None:
        fn(old)
        fn(new)

    return Handlers(on_add=fn, on_update=on_update, on_delete=fn)

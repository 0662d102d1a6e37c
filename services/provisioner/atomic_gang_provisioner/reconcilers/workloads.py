"""Workload reconciler: gathers inputs from the caches, runs the pure decision,
then creates/claims/releases the pool and server-side-applies our check state."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from atomic_gang.errors import clip
from atomic_gang.resources import (
    CUSTOM_OWNERS,
    JOBS,
    KUEUE_API,
    POOLS,
    WORKLOADS,
    Resource,
)
from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.events import Event
from atomic_gang_provisioner.kube.api_errors import (
    AlreadyExistsError,
    ConflictError,
    KubeError,
    NotFoundError,
)
from atomic_gang_provisioner.kube.objects import meta
from atomic_gang_provisioner.reconcilers.context import Cache, Context
from atomic_gang_provisioner.reconcilers.latest import LatestWrites
from atomic_gang_provisioner.runtime import Result
from atomic_gang_provisioner.views.base import ObjectView
from atomic_gang_provisioner.views.owner import JOB_UID_INDEX, Owner
from atomic_gang_provisioner.views.pool_object import CLAIM_INDEX
from atomic_gang_provisioner.views.resource_flavor import ResourceFlavor
from atomic_gang_provisioner.workload import decision, podsets, tenancy
from atomic_gang_provisioner.workload.judgments import Judgments
from atomic_gang_provisioner.workload.owners import JudgedOwner, judge
from atomic_gang_provisioner.workload.plan import (
    CheckUpdate,
    Claimant,
    Inputs,
    SpecChange,
    WorkloadPlan,
)
from atomic_gang_provisioner.workload.slim import slim
from atomic_gang_provisioner.workload.view import WorkloadView, view

log = logging.getLogger("atomic_gang_provisioner.workload")
MAX_ERROR = 200  # an apiserver error quoted in a check message


class WorkloadReconciler:
    def __init__(
        self,
        ctx: Context,
        *,
        latest: LatestWrites | None = None,
        applied: LatestWrites | None = None,
    ) -> None:
        self.ctx = ctx
        self._latest = latest or LatestWrites(ctx.pools)
        # Our own check writes: the next reconcile applies on top of the resourceVersion
        # our last apply returned, not the cached one it superseded (a sure conflict).
        self._applied = applied or LatestWrites(ctx.workloads, slim=slim)
        settings = ctx.settings
        # Each owner and each ResourceFlavor judged once per version.
        self.owners: Judgments[JudgedOwner] = Judgments(
            lambda owner: judge(owner, settings.for_namespace(Owner(owner).namespace))
        )
        self.flavors: Judgments[bool] = Judgments(
            lambda flavor: podsets.flavor_claims_gang_nodes(ResourceFlavor(flavor))
        )

    def reconcile(self, key: str) -> Result:
        try:
            return self._reconcile(key)
        except ConflictError as err:  # a stale cache or a racing writer: look again
            log.info("conflict; retrying", extra={"workload": key, "error": str(err)})
            return Result(requeue=True)

    def _reconcile(self, key: str) -> Result:
        obj = self._applied.newest(key)
        if obj is None:
            self._release_orphaned_claims(key)
            return Result()
        inputs = self._inputs(view(obj))
        plan = decision.decide(inputs)
        self._perform(inputs.wl, obj, inputs.owner, plan)
        return Result(requeue_after=plan.requeue_after)

    def _inputs(self, wl: WorkloadView) -> Inputs:
        """What the decision reads: the Workload, its owner's verdict (judged once per
        owner version), its pool and that pool's claimant, and its ResourceFlavors."""
        found, owner_error = self._owner(wl)
        owner = self.owners.of(found) if found is not None else None
        pool = self._pool(owner, wl)
        return Inputs(
            wl=wl,
            our_checks=self.ctx.our_checks(),
            owner=owner,
            owner_error=owner_error,
            pool=pool,
            claimant=self._claimant(pool, wl),
            flavor_labels=self._flavor_labels(wl),
            claiming_flavors=self._claiming_flavors(wl),
            settings=self.ctx.settings,
            now=self.ctx.now(),
            failed_retry_seconds=int(self.ctx.knobs.backoff_max),
        )

    def _sources(self) -> dict[tuple[str, str], tuple[Resource, Cache | None]]:
        """(API group, kind) of a served owner -> where to read it: its collection, and
        the cache of the ones with our pool label (None: read by a GET)."""
        found: dict[tuple[str, str], tuple[Resource, Cache | None]] = {
            ("batch", "Job"): (JOBS, self.ctx.jobs)
        }
        for res in CUSTOM_OWNERS:
            found[(res.group, res.kind)] = (res, self.ctx.owners.get(res.plural))
        return found

    def _owner(self, wl: WorkloadView) -> tuple[Mapping[str, Any] | None, str]:
        """(the owner Job or JobSet or None, why it could not be read: "" when it was
        read, or when the Workload's owner is of a kind we do not serve)."""
        owner = wl.owner
        if owner is None:
            # Kueue's job-uid label counts only without an owner reference, and only for
            # a Job in the Workload's own namespace: a Workload never pairs with another
            # team's Job.
            found = self.ctx.jobs.by_index(JOB_UID_INDEX, f"{wl.namespace}/{wl.job_uid_label}")
            return next(iter(found), None), ""
        source = self._sources().get((owner.group, owner.kind))
        if source is None:
            return None, ""
        resource, cache = source
        if cache is not None:
            for obj in cache.by_index(JOB_UID_INDEX, f"{wl.namespace}/{owner.uid}"):
                return obj, ""
            cached = cache.get(f"{wl.namespace}/{owner.name}")
            if cached is not None or not self._awaits_us(wl):
                return cached, ""
        return self._live_owner(resource, wl.namespace, owner.name, owner.uid)

    def _awaits_us(self, wl: WorkloadView) -> bool:
        """In play with our check still Pending: only then is a cache miss worth a GET."""
        ours = self.ctx.our_checks()
        return wl.in_play and any(c.name in ours and c.state == "Pending" for c in wl.checks)

    def _live_owner(
        self, resource: Resource, namespace: str, name: str, uid: str
    ) -> tuple[Mapping[str, Any] | None, str]:
        """The owner caches hold only objects with the pool label. A Job or JobSet without
        it that is queued to our check must still be found, so that it is Rejected with a
        message rather than awaited forever; the GET also covers a labelled one the cache
        has not seen yet (and every JobSet when JobSets were not served at start-up). A
        404 is an answer (the owner is gone); any other failure is not, and the decision
        waits for it within ownerWaitSeconds."""
        try:
            obj = self.ctx.client.get(resource, name, namespace=namespace)
        except NotFoundError:
            return None, ""
        except KubeError as err:
            return None, clip(f"{type(err).__name__}: {err.message}", MAX_ERROR)
        if not obj or (uid and Owner(obj).uid != uid):
            return None, ""  # e.g. a new Job under the old name: not this Workload's owner
        return obj, ""

    def _pool(self, owner: JudgedOwner | None, wl: WorkloadView) -> GangNodePool | None:
        """The pool the owner's label names for this Workload (``tenancy.pool_name``:
        its namespace's own, or the bare-named pool of a listed label or of an older
        release that still serves it)."""
        label = owner.pool if owner is not None else None
        if not label:
            return None
        name = tenancy.pool_name(
            str(label),
            namespace=wl.namespace,
            workload_uid=wl.uid,
            settings=self.ctx.settings,
            legacy=self._read_pool(str(label)),
        )
        return self._read_pool(name)

    def _read_pool(self, name: str) -> GangNodePool | None:
        obj = self._latest.newest(name)  # our own write if the watch has not brought it
        return GangNodePool.from_dict(obj) if obj is not None else None

    def _claimant(self, pool: GangNodePool | None, wl: WorkloadView) -> Claimant:
        claim = pool.spec.claim if pool is not None else None
        if claim is None or claim.uid == wl.uid:
            return "absent"
        other = self.ctx.workloads.get(f"{claim.namespace}/{claim.name}")
        if other is None or ObjectView(other).uid != claim.uid:
            return "absent"
        return "active" if view(other).in_play else "inactive"

    def _flavor(self, name: str) -> ResourceFlavor:
        """A ResourceFlavor the cache does not hold (yet) reads as one with no spec."""
        found = self.ctx.flavors.get(name)
        return ResourceFlavor(found if found is not None else {})

    def _claiming_flavors(self, wl: WorkloadView) -> frozenset[str]:
        """The Workload's flavors that select gang nodes or tolerate the gang taint (one a
        cache does not hold yet claims nothing)."""
        cached = ((name, self.ctx.flavors.get(name)) for name in wl.flavors)
        return frozenset(name for name, f in cached if f is not None and self.flavors.of(f))

    def _flavor_labels(self, wl: WorkloadView) -> dict[str, str]:
        labels: dict[str, str] = {}
        for name in wl.flavors:
            labels.update(self._flavor(name).node_labels)
        return labels

    def _perform(
        self,
        wl: WorkloadView,
        obj: Mapping[str, Any],
        owner: JudgedOwner | None,
        plan: WorkloadPlan,
    ) -> None:
        ctx = self.ctx
        about_all = (obj, owner.target) if owner is not None else (obj,)

        def emit(events: Iterable[Event]) -> None:
            for ev in events:
                for about in about_all:
                    ctx.events.event(
                        dict(about), type=ev.type, reason=ev.reason, message=ev.message
                    )
                log.info(ev.message, extra={"workload": wl.key, "reason": ev.reason})

        if plan.create_pool is not None:
            ctx.must_lead()
            try:
                ctx.client.create(POOLS, plan.create_pool.to_dict())
            except AlreadyExistsError as err:  # cache lag: the requeue sees it
                raise ConflictError(str(err)) from err
        if plan.spec_change is not None:
            self._change_spec(plan.spec_change)
        emit(plan.pool_events)  # the pool changes happened, whatever follows
        for update in plan.checks:
            self._apply_check(wl, update)
        emit(u.event for u in plan.checks if u.event is not None)

    def _change_spec(self, change: SpecChange) -> None:
        self.ctx.must_lead()
        spec: dict[str, Any] = {
            "claim": change.claim.model_dump(mode="json") if change.claim else None
        }
        if change.keep_warm_ttl is not None:
            spec["keepWarmTTL"] = change.keep_warm_ttl
            spec["minRuntime"] = change.min_runtime  # None clears the previous claimant's
            spec["repair"] = change.repair
        if change.shape is not None:
            spec["shape"] = change.shape.model_dump(mode="json")
        if change.owner_namespace is not None:
            spec["ownerNamespace"] = change.owner_namespace
        self.ctx.client.patch(
            POOLS, change.pool, {"spec": spec}, resource_version=change.resource_version
        )

    def _apply_check(self, wl: WorkloadView, update: CheckUpdate) -> None:
        self.ctx.must_lead()
        entry: dict[str, Any] = {
            "name": update.name,
            "state": update.state,
            "message": update.message,
            "lastTransitionTime": update.last_transition_time,
        }
        if update.pod_set_updates:
            entry["podSetUpdates"] = list(update.pod_set_updates)
        if update.requeue_after_seconds is not None:
            entry["requeueAfterSeconds"] = update.requeue_after_seconds
        body = {
            "apiVersion": KUEUE_API,
            "kind": "Workload",
            "metadata": {
                "name": wl.name,
                "namespace": wl.namespace,
                "resourceVersion": wl.resource_version,
            },
            "status": {"admissionChecks": [entry]},
        }
        applied = self.ctx.client.apply_status(
            WORKLOADS, body, field_manager=self.ctx.settings.controller_name
        )
        self._applied.remember(applied)
        self.ctx.metrics.check_transitions.labels(update.state).inc()

    def _release_orphaned_claims(self, key: str) -> None:
        """A deleted Workload's claim is released (its delete event brought us here)."""
        for obj in self.ctx.pools.by_index(CLAIM_INDEX, key):
            pool = GangNodePool.from_dict(obj)
            self.ctx.must_lead()
            try:
                self.ctx.client.patch(
                    POOLS,
                    pool.name,
                    {"spec": {"claim": None}},
                    resource_version=pool.resource_version,
                )
            except NotFoundError:
                continue
            log.info(
                "released the claim of a deleted Workload",
                extra={"workload": key, "pool": pool.name},
            )


def job_read_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a Job update changed what this side reads of it: its spec (generation),
    labels, annotations or deletion. Its status moves with every pod (800 pods at
    scale) and is not read: those updates enqueue no Workload."""
    return Owner(old).read_fields() != Owner(new).read_fields()


def workload_read_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a Workload update changed what this side reads of it (its view, less the
    resourceVersion), or is a resync (the same version again: the spread periodic look).
    Kueue rewrites an admitted Workload's status as its Job starts and its pods run
    (condition messages and times, admission details, reclaimable pods): those updates
    decide nothing here and enqueue nothing."""
    if meta(old).get("resourceVersion") == meta(new).get("resourceVersion"):
        return True
    return replace(view(old), resource_version="") != replace(view(new), resource_version="")

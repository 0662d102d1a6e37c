"""Pure decision for one Workload: claim, check state, events.

Reads like a table of contents: leave unless the Workload carries our check;
release the claim unless it is in play (quota reserved, not finished, not
evicted, active); validate the Job again; claim or create the pool; then map
the pool's status onto our AdmissionCheckState.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from atomic_gang import GangSettings, GangSpec, GangValidationError, keys, validate_job
from atomic_gang.job import MalformedJobError
from atomic_gang_provisioner.api import FINALIZER, Claim, GangNodePool, GangNodePoolSpec, PoolShape
from atomic_gang_provisioner.pool.model import Knobs
from atomic_gang_provisioner.pool.phases.acquiring import gave_up, rejected
from atomic_gang_provisioner.workload import messages
from atomic_gang_provisioner.workload.view import CheckState, WorkloadView

State = Literal["Pending", "Ready", "Retry", "Rejected"]
Claimant = Literal["active", "inactive", "absent"]
PODSET = "main"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckUpdate:
    name: str
    state: State
    message: str
    last_transition_time: str
    pod_set_updates: tuple[dict[str, Any], ...] = ()
    requeue_after_seconds: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecChange:
    """A merge patch of a pool's spec, guarded by its resourceVersion."""

    pool: str
    resource_version: str
    claim: Claim | None
    keep_warm_ttl: str | None = None
    shape: PoolShape | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    wl: WorkloadView
    our_checks: frozenset[str]
    job: Mapping[str, Any] | None
    pool: GangNodePool | None
    claimant: Claimant = "absent"
    flavor_labels: Mapping[str, str] = field(default_factory=dict)
    settings: GangSettings
    knobs: Knobs
    now: datetime
    retry_seconds: int = 30


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadPlan:
    create_pool: GangNodePool | None = None
    spec_change: SpecChange | None = None
    checks: tuple[CheckUpdate, ...] = ()
    events: tuple[tuple[str, str, str], ...] = ()  # (type, reason, message)
    requeue_after: float | None = None


def _ts(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _set(
    inp: Inputs, current: CheckState, state: State, message: str, **extra: Any
) -> WorkloadPlan:
    """Write our entry only if something changed; emit an event on a state change."""
    message = message[:32000]
    psu = tuple(extra.get("pod_set_updates", ()))
    requeue = extra.get("requeue_after_seconds")
    same = (
        current.state == state
        and current.message == message
        and tuple(current.pod_set_updates) == psu
        and current.requeue_after_seconds == requeue
    )
    if same:
        return WorkloadPlan()
    since = current.last_transition_time if current.state == state else ""
    update = CheckUpdate(
        name=current.name,
        state=state,
        message=message,
        last_transition_time=since or _ts(inp.now),
        pod_set_updates=psu,
        requeue_after_seconds=requeue,
    )
    events: tuple[tuple[str, str, str], ...] = ()
    if current.state != state:
        kind = "Normal" if state in ("Pending", "Ready") else "Warning"
        events = ((kind, f"Gang{state}", message),)
    return WorkloadPlan(checks=(update,), events=events)


def _release(inp: Inputs) -> WorkloadPlan:
    pool = inp.pool
    if pool is None or pool.spec.claim is None or pool.spec.claim.uid != inp.wl.uid:
        return WorkloadPlan()
    change = SpecChange(pool=pool.name, resource_version=pool.resource_version, claim=None)
    why = "finished, evicted, deactivated or without quota"
    return WorkloadPlan(
        spec_change=change,
        events=(("Normal", "ClaimReleased", f"Released pool {pool.name}: the Workload is {why}"),),
    )


def decide(inp: Inputs) -> WorkloadPlan:
    ours = [c for c in inp.wl.checks if c.name in inp.our_checks]
    if not ours or not inp.wl.in_play:
        return _release(inp)
    current = ours[0]
    if current.state in ("Retry", "Rejected"):
        return WorkloadPlan()  # Kueue resets it to Pending after the eviction
    if current.state == "Ready":
        # Admitted: Kueue has merged our podSetUpdates into the Job's template, so the
        # Job must not be validated again (its selector now carries our keys). Only a
        # broken gang changes anything from here.
        pool = inp.pool
        mine = (
            pool is not None and pool.spec.claim is not None and pool.spec.claim.uid == inp.wl.uid
        )
        return _claimed(inp, current, pool) if mine and pool is not None else WorkloadPlan()
    if inp.job is None:
        return _merge(
            _set(inp, current, "Pending", "Waiting for the owner Job to be visible"), requeue=5.0
        )
    try:
        spec = validate_job(inp.job, inp.settings)
    except (GangValidationError, MalformedJobError) as err:
        return _set(inp, current, "Rejected", f"Invalid gang Job: {err}")
    if spec is None:
        return _set(
            inp,
            current,
            "Rejected",
            (
                "The Job has no atomic-gang annotations or pool label, but its queue uses the "
                f"{inp.settings.controllerName} admission check; add the {keys.POOL} label and the "
                f"{keys.COUNT} and {keys.INSTANCE_TYPE} annotations, or use another queue"
            ),
        )
    if PODSET not in inp.wl.pod_sets:
        return _set(inp, current, "Rejected", f"expected a PodSet named {PODSET!r}")
    return _with_pool(inp, current, spec)


def _merge(plan: WorkloadPlan, *, requeue: float) -> WorkloadPlan:
    return WorkloadPlan(
        create_pool=plan.create_pool,
        spec_change=plan.spec_change,
        checks=plan.checks,
        events=plan.events,
        requeue_after=requeue,
    )


def _claim(inp: Inputs) -> Claim:
    return Claim(namespace=inp.wl.namespace, name=inp.wl.name, uid=inp.wl.uid, claimedAt=inp.now)


def _with_pool(inp: Inputs, current: CheckState, spec: GangSpec) -> WorkloadPlan:
    pool = inp.pool
    ttl = str(spec.keep_warm_ttl)
    if pool is None:
        created = GangNodePool(
            metadata={
                "name": spec.pool,
                "finalizers": [FINALIZER],
                "labels": {keys.MANAGED: "true"},
            },
            spec=GangNodePoolSpec(shape=PoolShape.of(spec), keepWarmTTL=ttl, claim=_claim(inp)),
        )
        plan = _set(
            inp,
            current,
            "Pending",
            f"Created pool {spec.pool}; acquiring {spec.count}×{spec.instance_type}; "
            "holding quota, nothing billed yet",
        )
        return WorkloadPlan(
            create_pool=created,
            checks=plan.checks,
            events=(*plan.events, ("Normal", "PoolCreated", f"Created GangNodePool {spec.pool}")),
        )
    if pool.deleting:
        return _merge(
            _set(
                inp,
                current,
                "Pending",
                f"Pool {pool.name} is being deleted; "
                "a new one is created once its instances are released",
            ),
            requeue=5.0,
        )
    claim = pool.spec.claim
    if claim is not None and claim.uid == inp.wl.uid:
        return _claimed(inp, current, pool)
    conflict, new_shape = _shape_check(pool, spec)
    if conflict:  # permanent, so it wins over "busy, retry later"
        return _set(inp, current, "Rejected", conflict)
    if claim is not None and inp.claimant == "active":
        return _set(
            inp,
            current,
            "Retry",
            (
                f"Pool {pool.name} is in use by Workload {claim.namespace}/{claim.name}; "
                f"releasing quota and retrying in {inp.retry_seconds}s"
            ),
            requeue_after_seconds=inp.retry_seconds,
        )
    return _take(inp, current, pool, new_shape, ttl)


def _shape_check(pool: GangNodePool, spec: GangSpec) -> tuple[str, PoolShape | None]:
    """(why this Job can never use the pool, or ""; the shape to adopt, if any)."""
    pool_spec = pool.spec.shape.gang_spec(pool=pool.name, keep_warm_ttl=pool.spec.keepWarmTTL)
    if pool_spec.shape_equals(spec):
        return "", None
    if pool.status.phase == "Idle" and not pool.status.instanceIds:
        return "", PoolShape.of(spec)  # nothing live: the next claimant redefines the pool
    diffs = ", ".join(
        f"{k} (pool {pool_spec.shape()[k]!r}, this Job {spec.shape()[k]!r})"
        for k in pool_spec.shape_diff(spec)
    )
    return (
        f"Pool {pool.name} holds a different shape: {diffs}. Pools are reused only by "
        "identical shapes; use a distinct pool label for a distinct shape"
    ), None


def _take(
    inp: Inputs, current: CheckState, pool: GangNodePool, shape: PoolShape | None, ttl: str
) -> WorkloadPlan:
    """Claim a free pool (or one whose claimant is gone)."""
    change = SpecChange(
        pool=pool.name,
        resource_version=pool.resource_version,
        claim=_claim(inp),
        keep_warm_ttl=ttl,
        shape=shape,
    )
    plan = _set(
        inp, current, "Pending", f"Claimed pool {pool.name}; {messages.progress(pool, inp.knobs)}"
    )
    return WorkloadPlan(
        spec_change=change,
        checks=plan.checks,
        events=(*plan.events, ("Normal", "PoolClaimed", f"Claimed GangNodePool {pool.name}")),
    )


def _claimed(inp: Inputs, current: CheckState, pool: GangNodePool) -> WorkloadPlan:
    s = pool.status
    key = pool.spec.claim.key if pool.spec.claim else ""
    if s.degradedClaimKey == key:
        return _set(
            inp,
            current,
            "Retry",
            (
                f"Gang degraded ({s.lastErrorReason}: {s.lastError}); the whole set is "
                "released and a fresh gang is acquired when Kueue requeues this Workload"
            ),
            requeue_after_seconds=0,
        )
    fresh = s.observedGeneration == pool.generation and s.claimKey == key
    if s.phase == "Satisfied" and fresh:
        return _ready(inp, current, pool)
    if current.state == "Ready":
        return WorkloadPlan()  # never Ready -> Pending; loss arrives as Degraded
    if s.phase in ("Idle", "Acquiring") and fresh and rejected(s):
        return _set(inp, current, "Rejected", f"Invalid gang Job: {s.lastError}")
    if s.phase in ("Idle", "Acquiring") and fresh and gave_up(s, inp.knobs):
        return _set(
            inp,
            current,
            "Retry",
            messages.gave_up(pool, inp.knobs),
            requeue_after_seconds=int(inp.knobs.backoff_max),
        )
    return _set(inp, current, "Pending", messages.progress(pool, inp.knobs))


def _ready(inp: Inputs, current: CheckState, pool: GangNodePool) -> WorkloadPlan:
    selector = {keys.POOL: pool.name, keys.GROUP: pool.status.activeGroup}
    clash = {k: v for k, v in inp.flavor_labels.items() if k in selector and v != selector[k]}
    if clash:
        return _set(
            inp,
            current,
            "Rejected",
            (
                f"The ResourceFlavor's nodeLabels set {', '.join(sorted(clash))}, which the gang's "
                "node selector must own; remove them from the ResourceFlavor"
            ),
        )
    update = {
        "name": PODSET,
        "nodeSelector": selector,
        "tolerations": [
            {
                "key": keys.GANG_TAINT,
                "operator": "Equal",
                "value": pool.name,
                "effect": "NoSchedule",
            }
        ],
    }
    return _set(inp, current, "Ready", messages.ready(pool), pod_set_updates=(update,))

"""Pure decision for one Workload: claim, check state, events.

Reads like a table of contents: leave unless the Workload carries our check;
release the claim unless it is in play (quota reserved, not finished, not
evicted, active); validate the owner (a Job or a JobSet) again and hold the
Workload's PodSets to it (``podsets``); claim or create the pool; then map what
the pool reports (``api.conditions``, nothing else of its status) onto our
AdmissionCheckState, with one podSetUpdate per gang role.
"""

from __future__ import annotations

from dataclasses import replace

from atomic_gang import GangSpec, GangValidationError, keys, patterns
from atomic_gang.gang_object import Gang, kind_of, validate
from atomic_gang.objects import MalformedJobError
from atomic_gang_provisioner.api import FINALIZER, Claim, GangNodePool, GangNodePoolSpec, PoolShape
from atomic_gang_provisioner.api import conditions as reported
from atomic_gang_provisioner.events import event
from atomic_gang_provisioner.views.owner import Owner
from atomic_gang_provisioner.workload import owners, podsets, tenancy
from atomic_gang_provisioner.workload.plan import Inputs, SpecChange, WorkloadPlan, set_check
from atomic_gang_provisioner.workload.view import CheckState, WorkloadView


def decide(inp: Inputs) -> WorkloadPlan:
    # Judged with the allowlists of the Workload's namespace (namespaceAllowlists).
    inp = replace(inp, settings=inp.settings.for_namespace(inp.wl.namespace))
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
        # The gang roles are the PodSets Kueue admitted with our updates.
        admitted = tuple(str(u.get("name", "")) for u in current.pod_set_updates)
        pool = inp.pool
        return (
            _claimed(inp, current, pool, admitted)
            if pool is not None and _mine(inp, pool)
            else WorkloadPlan()
        )
    unserved = owners.unserved(inp.wl, check=current.name, found_by_label=inp.owner is not None)
    if unserved:
        return set_check(inp, current, "Rejected", unserved)
    if inp.wl.elastic:
        return set_check(inp, current, "Rejected", _elastic(inp.wl, current))
    if inp.owner is None:
        return _owner_missing(inp, current)
    kind = kind_of(inp.owner)[1]
    try:
        gang = validate(inp.owner, inp.settings)
    except (GangValidationError, MalformedJobError) as err:
        return set_check(inp, current, "Rejected", f"Invalid gang {kind}: {err}")
    if gang is None:
        return set_check(inp, current, "Rejected", _not_a_gang(inp, kind))
    mismatch = podsets.mismatch(gang, inp.wl) or podsets.others_on_gang_flavors(
        gang, inp.wl, inp.claiming_flavors
    )
    if mismatch:
        return set_check(inp, current, "Rejected", mismatch)
    return _with_pool(inp, current, gang)


def _owner_missing(inp: Inputs, current: CheckState) -> WorkloadPlan:
    """Gone is final; unreadable is waited for, up to ``ownerWaitSeconds``."""
    if not inp.owner_error:
        return set_check(inp, current, "Rejected", owners.gone(inp.wl))
    limit = inp.settings.owner_wait_seconds
    why, left = owners.waited_out(
        inp.wl, current, error=inp.owner_error, now=inp.now, limit_seconds=limit
    )
    if why:
        return set_check(inp, current, "Rejected", why)
    waiting = set_check(inp, current, "Pending", owners.waiting(inp.wl, limit_seconds=limit))
    return replace(waiting, requeue_after=min(5.0, left))


def _elastic(wl: WorkloadView, current: CheckState) -> str:
    return (
        f'Workload {wl.key} is elastic ({keys.ELASTIC_JOB}: "true"): a gang\'s N nodes '
        "are launched once, all or nothing, and cannot follow a Job that grows or shrinks. "
        f"Remove the annotation from the Job, or use a queue without the {current.name} check"
    )


def _mine(inp: Inputs, pool: GangNodePool) -> bool:
    return pool.spec.claim is not None and pool.spec.claim.uid == inp.wl.uid


def _not_a_gang(inp: Inputs, kind: str) -> str:
    return (
        f"The {kind} has no atomic-gang annotations or pool label, but its queue uses the "
        f"{inp.settings.controller_name} admission check; add the {keys.POOL} label and the "
        f"{keys.COUNT} and {keys.INSTANCE_TYPE} annotations, or use another queue"
    )


def _release(inp: Inputs) -> WorkloadPlan:
    pool = inp.pool
    if pool is None or not _mine(inp, pool):
        return WorkloadPlan()
    change = SpecChange(pool=pool.name, resource_version=pool.resource_version, claim=None)
    why = "finished, evicted, deactivated or without quota"
    return WorkloadPlan(
        spec_change=change,
        pool_events=(event("ClaimReleased", f"Released pool {pool.name}: the Workload is {why}"),),
    )


def _claim(inp: Inputs, gang: Gang) -> Claim:
    """The claim of a Workload whose owner was validated, with what its largest gang pod
    asks of a Node."""
    return Claim(
        namespace=inp.wl.namespace,
        name=inp.wl.name,
        uid=inp.wl.uid,
        owner=_owner_named(inp, gang),
        claimedAt=inp.now,
        resources=podsets.largest_requests(gang, inp.wl),
    )


def _owner_named(inp: Inputs, gang: Gang) -> str:
    """``JobSet/allreduce``: the object the gang is for, as the pool and messages name it."""
    name = Owner(inp.owner).name if inp.owner is not None else ""
    return f"{gang.kind}/{name}"


def _with_pool(inp: Inputs, current: CheckState, gang: Gang) -> WorkloadPlan:
    pool, spec = inp.pool, gang.spec
    standing = tenancy.access(
        pool,
        name=spec.pool,
        namespace=inp.wl.namespace,
        claimant=inp.claimant,
        settings=inp.settings,
    )
    if standing == "reserved":  # the name is never this namespace's: a permanent answer
        return set_check(inp, current, "Rejected", tenancy.reserved(spec.pool))
    if standing == "taken":  # the owner's instances or claim are in it: wait, holding nothing
        taken = tenancy.taken(spec.pool, inp.retry_seconds)
        return set_check(inp, current, "Retry", taken, requeue_after_seconds=inp.retry_seconds)
    if pool is None:
        return _create(inp, current, gang)
    if pool.deleting:
        deleting = set_check(
            inp,
            current,
            "Pending",
            f"Pool {pool.name} is being deleted; "
            "a new one is created once its instances are released",
        )
        return replace(deleting, requeue_after=5.0)
    claim = pool.spec.claim
    if claim is not None and claim.uid == inp.wl.uid:
        return _claimed(inp, current, pool, gang.roles)
    conflict, new_shape = _shape_check(
        pool, spec, own=pool.spec.ownerNamespace in (None, inp.wl.namespace)
    )
    if conflict:  # permanent, so it wins over "busy, retry later"
        return set_check(inp, current, "Rejected", conflict)
    if claim is not None and inp.claimant == "active":
        who = (
            f"Workload {claim.namespace}/{claim.name}"
            if claim.namespace == inp.wl.namespace
            else "a Workload of another namespace"  # never a foreign object's name
        )
        return set_check(
            inp,
            current,
            "Retry",
            f"Pool {pool.name} is in use by {who}; releasing quota and retrying in "
            f"{inp.retry_seconds}s",
            requeue_after_seconds=inp.retry_seconds,
        )
    if not _may_use_reservation(inp, pool):  # the shape leaves the reservation out
        return set_check(
            inp,
            current,
            "Retry",
            f"Pool {pool.name}'s warm set runs in a capacity reservation this namespace may "
            f"not use (allowedCapacityReservationIds); releasing quota and retrying in "
            f"{inp.retry_seconds}s",
            requeue_after_seconds=inp.retry_seconds,
        )
    owner = None if standing == "owner" and pool.spec.ownerNamespace else inp.wl.namespace
    return _take(inp, current, pool, new_shape, gang, owner=owner)


def _may_use_reservation(inp: Inputs, pool: GangNodePool) -> bool:
    """Whether this namespace may run in the reservation the pool's live set runs in."""
    held = pool.status.reservationId
    if not held or reported.holds_nothing(pool):
        return True
    return patterns.allowed(held, inp.settings.allowed_capacity_reservation_ids)


def _create(inp: Inputs, current: CheckState, gang: Gang) -> WorkloadPlan:
    spec = gang.spec
    created = GangNodePool(
        metadata={"name": spec.pool, "finalizers": [FINALIZER], "labels": {keys.MANAGED: "true"}},
        spec=GangNodePoolSpec(
            shape=PoolShape.of(spec),
            ownerNamespace=inp.wl.namespace,
            keepWarmTTL=str(spec.keep_warm_ttl),
            minRuntime=_min_runtime(spec),
            claim=_claim(inp, gang),
        ),
    )
    plan = set_check(
        inp,
        current,
        "Pending",
        f"Created pool {spec.pool} for {_owner_named(inp, gang)}; acquiring "
        f"{spec.count}×{spec.instance_type}; "
        "holding quota, nothing billed yet",
    )
    return replace(
        plan,
        create_pool=created,
        pool_events=(event("PoolCreated", f"Created GangNodePool {spec.pool}"),),
    )


def _shape_check(pool: GangNodePool, spec: GangSpec, *, own: bool) -> tuple[str, PoolShape | None]:
    """(why this Job can never use the pool, or ""; the shape to adopt, if any). The
    differences are spelt out only to the pool's own namespace (``own``): another
    namespace sharing the name learns which fields differ, not their values."""
    pool_spec = pool.spec.shape.gang_spec(pool=pool.name, keep_warm_ttl=pool.spec.keepWarmTTL)
    nothing_live = reported.holds_nothing(pool)
    if pool_spec.shape_equals(spec):
        # Its reservations are the claimant's to name, for a set still to be launched.
        fresh = PoolShape.of(spec)
        return "", fresh if nothing_live and fresh != pool.spec.shape else None
    if nothing_live:
        return "", PoolShape.of(spec)  # nothing live: the next claimant redefines the pool
    diffs = ", ".join(
        f"{k} (pool {pool_spec.shape()[k]!r}, this Job {spec.shape()[k]!r})" if own else k
        for k in pool_spec.shape_diff(spec)
    )
    return (
        f"Pool {pool.name} holds a different shape: {diffs}. Pools are reused only by "
        "identical shapes; use a distinct pool label for a distinct shape"
    ), None


def _min_runtime(spec: GangSpec) -> str | None:
    return str(spec.min_runtime) if spec.min_runtime is not None else None


def _take(
    inp: Inputs,
    current: CheckState,
    pool: GangNodePool,
    shape: PoolShape | None,
    gang: Gang,
    *,
    owner: str | None,
) -> WorkloadPlan:
    """Claim a free pool (or one whose claimant is gone); ``owner``: the namespace to
    record as the pool's (its ownership lapsed, or was never recorded), else None."""
    spec = gang.spec
    change = SpecChange(
        pool=pool.name,
        resource_version=pool.resource_version,
        claim=_claim(inp, gang),
        keep_warm_ttl=str(spec.keep_warm_ttl),
        min_runtime=_min_runtime(spec),
        shape=shape,
        owner_namespace=owner,
    )
    message = f"Claimed pool {pool.name} for {_owner_named(inp, gang)}; {reported.progress(pool)}"
    return replace(
        set_check(inp, current, "Pending", message),
        spec_change=change,
        pool_events=(event("PoolClaimed", f"Claimed GangNodePool {pool.name}"),),
    )


def _claimed(
    inp: Inputs, current: CheckState, pool: GangNodePool, roles: tuple[str, ...]
) -> WorkloadPlan:
    """Our claim: the check follows what the pool reports to it; ``roles``: the PodSets
    that get the gang's node selector and toleration."""
    report = reported.for_claim(pool, pool.spec.claim.key if pool.spec.claim else "")
    if report.degraded is not None:
        lost = report.degraded
        return set_check(
            inp,
            current,
            "Retry",
            (
                f"Gang degraded ({lost.reason}: {lost.message}); the whole set is "
                "released and a fresh gang is acquired when Kueue requeues this Workload"
            ),
            requeue_after_seconds=0,
        )
    if report.ready:
        return _ready(inp, current, pool, report.ready, roles)
    if current.state == "Ready":
        return WorkloadPlan()  # never Ready -> Pending; loss arrives as Degraded
    failed = report.failed
    if failed is not None and failed.checkState is not None:
        retry = inp.failed_retry_seconds if failed.checkState == "Retry" else None
        return set_check(
            inp, current, failed.checkState, failed.message, requeue_after_seconds=retry
        )
    return set_check(inp, current, "Pending", report.progress)


def _ready(
    inp: Inputs, current: CheckState, pool: GangNodePool, ready: str, roles: tuple[str, ...]
) -> WorkloadPlan:
    selector = {keys.POOL: pool.name, keys.GROUP: pool.status.activeGroup}
    clash = {k: v for k, v in inp.flavor_labels.items() if k in selector and v != selector[k]}
    if clash:
        return set_check(
            inp,
            current,
            "Rejected",
            (
                f"The ResourceFlavor's nodeLabels set {', '.join(sorted(clash))}, which the gang's "
                "node selector must own; remove them from the ResourceFlavor"
            ),
        )
    updates = tuple(
        {
            "name": role,
            "nodeSelector": selector,
            "tolerations": [
                # No effect: it matches the gang taint whatever its effect (NoExecute, and
                # NoSchedule on nodes launched before that change).
                {"key": keys.GANG_TAINT, "operator": "Equal", "value": pool.name}
            ],
        }
        for role in roles
    )
    message = f"{ready}; pods are pinned to them"
    return set_check(inp, current, "Ready", message, pod_set_updates=updates)

"""Pure decision for one Workload: claim, check state, events.

Reads like a table of contents: leave unless the Workload carries our check;
release the claim unless it is in play (quota reserved, not finished, not
evicted, active); read the owner's verdict (a Job, JobSet or TrainJob, judged once
per version: ``judged``) and hold the Workload's PodSets to it (``podsets``); claim or
create the pool; then map what
the pool reports (``api.conditions``, nothing else of its status) onto our
AdmissionCheckState, with one podSetUpdate per gang role. ``set_check`` is the one way
the decision changes our AdmissionCheckState: it writes only on a change and emits an
Event on a transition.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from atomic_gang import GangSpec, keys
from atomic_gang.pool_access import object_name
from atomic_gang_provisioner.api import FINALIZER, Claim, GangNodePool, GangNodePoolSpec, PoolShape
from atomic_gang_provisioner.api import conditions as reported
from atomic_gang_provisioner.events import event
from atomic_gang_provisioner.timestamps import rfc3339
from atomic_gang_provisioner.workload import owners, tenancy
from atomic_gang_provisioner.workload.plan import (
    MAX_MESSAGE,
    CheckUpdate,
    Inputs,
    SpecChange,
    State,
    WorkloadPlan,
)
from atomic_gang_provisioner.workload.view import CheckState


def decide(inp: Inputs) -> WorkloadPlan:
    # Judged with the allowlists of the Workload's namespace (namespaceAllowlists).
    inp = replace(inp, settings=inp.settings.for_namespace(inp.wl.namespace))
    ours = [c for c in inp.wl.checks if c.name in inp.our_checks]
    if not ours or not inp.wl.in_play:
        return _release(inp)
    current = ours[0]
    if current.state in ("Retry", "Rejected"):
        return WorkloadPlan()  # Kueue resets it to Pending after the eviction
    pool = inp.pool
    report = (
        reported.for_claim(pool, pool.spec.claim.key if pool.spec.claim else "") if pool else None
    )
    if current.state == "Ready":
        # Admitted: Kueue has merged our podSetUpdates into the Job's template, so the
        # Job must not be judged again (its selector now carries our keys). Only a
        # broken gang changes anything from here.
        # The gang roles are the PodSets Kueue admitted with our updates.
        admitted = tuple(str(u.get("name", "")) for u in current.pod_set_updates)
        if pool is None or report is None or not _mine(inp, pool):
            return WorkloadPlan()
        return _adopting(inp, pool, _claimed(inp, current, pool, report, admitted))
    served = owners.verdict(
        inp.wl,
        inp.owner,
        error=inp.owner_error,
        current=current,
        now=inp.now,
        settings=inp.settings,
        claiming_flavors=inp.claiming_flavors,
    )
    if isinstance(served, owners.Refused):
        return set_check(inp, current, "Rejected", served.message)
    if isinstance(served, owners.Awaited):
        waiting = set_check(inp, current, "Pending", served.message)
        return replace(waiting, requeue_after=served.requeue_after)
    return _with_pool(inp, current, served, report)


def _mine(inp: Inputs, pool: GangNodePool) -> bool:
    return pool.spec.claim is not None and pool.spec.claim.uid == inp.wl.uid


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


def _claim(inp: Inputs, gang: owners.Served) -> Claim:
    """The claim of a Workload whose owner was validated, with what its largest gang pod
    asks of a Node."""
    return Claim(
        namespace=inp.wl.namespace,
        name=inp.wl.name,
        uid=inp.wl.uid,
        owner=_owner_named(inp, gang),
        claimedAt=inp.now,
        resources=gang.requests,
    )


def _owner_named(inp: Inputs, gang: owners.Served) -> str:
    """``JobSet/allreduce``: the object the gang is for, as the pool and messages name it."""
    return inp.owner.named if inp.owner is not None else f"{gang.gang.kind}/"


def _with_pool(
    inp: Inputs, current: CheckState, gang: owners.Served, report: reported.ClaimReport | None
) -> WorkloadPlan:
    pool, spec = inp.pool, gang.gang.spec
    # The reconciler read the pool the label names for this Workload (tenancy.pool_name);
    # none there: the label's own name, which a new pool gets.
    name = (
        pool.name
        if pool is not None
        else object_name(spec.pool, inp.wl.namespace, inp.settings.pool_namespaces)
    )
    standing = tenancy.standing(
        pool,
        holds_nothing=report.holds_nothing if report is not None else True,
        name=name,
        namespace=inp.wl.namespace,
        settings=inp.settings,
        retry_seconds=inp.retry_seconds,
    )
    if standing.refused:  # the name is never this namespace's: a permanent answer
        return set_check(inp, current, "Rejected", standing.refused)
    if pool is None or report is None:
        return _create(inp, current, gang, name)
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
        return _adopting(inp, pool, _claimed(inp, current, pool, report, gang.gang.roles))
    conflict, new_shape = _shape_check(
        pool, spec, own=pool.spec.ownerNamespace in (None, inp.wl.namespace), report=report
    )
    if conflict:  # permanent, so it wins over "busy, retry later"
        return set_check(inp, current, "Rejected", conflict)
    if claim is not None and inp.claimant == "active":
        who = (
            f"Workload {claim.namespace}/{claim.name}"
            if claim.namespace == inp.wl.namespace
            else "a Workload of another namespace"  # never a foreign object's name
        )
        return _retry(
            inp,
            current,
            f"Pool {pool.name} is in use by {who}; releasing quota and retrying in "
            f"{inp.retry_seconds}s",
        )
    if standing.reservation:  # the shape leaves the reservation out
        return _retry(inp, current, standing.reservation)
    owner = None if standing.access == "owner" and pool.spec.ownerNamespace else inp.wl.namespace
    return _take(inp, current, pool, new_shape, gang, owner=owner, report=report)


def _adopting(inp: Inputs, pool: GangNodePool, plan: WorkloadPlan) -> WorkloadPlan:
    """A pool from before ownership that this Workload holds becomes its namespace's
    (``tenancy``): no other namespace's label reaches it, and its warm set is kept."""
    if pool.spec.ownerNamespace is not None or plan.spec_change is not None:
        return plan
    change = SpecChange(
        pool=pool.name,
        resource_version=pool.resource_version,
        claim=pool.spec.claim,
        owner_namespace=inp.wl.namespace,
    )
    return replace(plan, spec_change=change)


def _retry(inp: Inputs, current: CheckState, message: str) -> WorkloadPlan:
    """Retry: Kueue releases the quota and requeues the Workload after ``retry_seconds``."""
    return set_check(inp, current, "Retry", message, requeue_after_seconds=inp.retry_seconds)


def _create(inp: Inputs, current: CheckState, gang: owners.Served, name: str) -> WorkloadPlan:
    spec = gang.gang.spec
    created = GangNodePool(
        metadata={"name": name, "finalizers": [FINALIZER], "labels": {keys.MANAGED: "true"}},
        spec=GangNodePoolSpec(
            shape=PoolShape.of(spec),
            ownerNamespace=inp.wl.namespace,
            keepWarmTTL=str(spec.keep_warm_ttl),
            minRuntime=_min_runtime(spec),
            repair=_repair(spec),
            claim=_claim(inp, gang),
        ),
    )
    plan = set_check(
        inp,
        current,
        "Pending",
        f"Created pool {name} for {_owner_named(inp, gang)}; acquiring "
        f"{spec.count}×{spec.instance_type}; "
        "holding quota, nothing billed yet",
    )
    return replace(
        plan,
        create_pool=created,
        pool_events=(event("PoolCreated", f"Created GangNodePool {name}"),),
    )


def _shape_check(
    pool: GangNodePool, spec: GangSpec, *, own: bool, report: reported.ClaimReport
) -> tuple[str, PoolShape | None]:
    """(why this Job can never use the pool, or ""; the shape to adopt, if any). The
    differences are spelt out only to the pool's own namespace (``own``): another
    namespace sharing the name learns which fields differ, not their values."""
    pool_spec = pool.spec.shape.gang_spec(pool=pool.name, keep_warm_ttl=pool.spec.keepWarmTTL)
    nothing_live = report.holds_nothing
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


def _repair(spec: GangSpec) -> Literal["never"] | None:
    """The claimant's opt-out of repair; None (auto) leaves the pool's spec without it."""
    return "never" if spec.repair == "never" else None


def _take(
    inp: Inputs,
    current: CheckState,
    pool: GangNodePool,
    shape: PoolShape | None,
    gang: owners.Served,
    *,
    owner: str | None,
    report: reported.ClaimReport,
) -> WorkloadPlan:
    """Claim a free pool (or one whose claimant is gone); ``owner``: the namespace to
    record as the pool's (its ownership lapsed, or was never recorded), else None."""
    spec = gang.gang.spec
    change = SpecChange(
        pool=pool.name,
        resource_version=pool.resource_version,
        claim=_claim(inp, gang),
        keep_warm_ttl=str(spec.keep_warm_ttl),
        min_runtime=_min_runtime(spec),
        repair=_repair(spec),
        shape=shape,
        owner_namespace=owner,
    )
    # Told from this claimant's own shape: what the pool said to its previous claimant
    # (another namespace's, where the admin lists the name for several) is not its to read.
    own = PoolShape.of(spec)
    doing = (
        reported.acquiring(own)
        if report.holds_nothing
        else f"reusing its warm set of {own.count}×{own.instanceType}; nothing to launch"
    )
    message = f"Claimed pool {pool.name} for {_owner_named(inp, gang)}; {doing}"
    return replace(
        set_check(inp, current, "Pending", message),
        spec_change=change,
        pool_events=(event("PoolClaimed", f"Claimed GangNodePool {pool.name}"),),
    )


def _claimed(
    inp: Inputs,
    current: CheckState,
    pool: GangNodePool,
    report: reported.ClaimReport,
    roles: tuple[str, ...],
) -> WorkloadPlan:
    """Our claim: the check follows what the pool reports to it; ``roles``: the PodSets
    that get the gang's node selector and toleration."""
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


def set_check(
    inp: Inputs,
    current: CheckState,
    state: State,
    message: str,
    *,
    pod_set_updates: tuple[dict[str, Any], ...] = (),
    requeue_after_seconds: int | None = None,
) -> WorkloadPlan:
    """Write our entry only if something changed; emit an event on a state change.

    ``requeueAfterSeconds`` is compared only where we set it: after a Retry, Kueue's
    reset to Pending keeps the value under its own field manager, so an entry without it
    still shows it, and comparing there would re-send every later apply."""
    message = (message + attempt_note(current, state))[:MAX_MESSAGE]
    same = (
        current.state == state
        and current.message == message
        and tuple(current.pod_set_updates) == pod_set_updates
        and (
            requeue_after_seconds is None or current.requeue_after_seconds == requeue_after_seconds
        )
    )
    if same:
        return WorkloadPlan()
    moved = current.state != state
    update = CheckUpdate(
        name=current.name,
        state=state,
        message=message,
        last_transition_time=("" if moved else current.last_transition_time) or rfc3339(inp.now),
        pod_set_updates=pod_set_updates,
        requeue_after_seconds=requeue_after_seconds,
        event=event(f"Gang{state}", message, warning=state in ("Retry", "Rejected"))
        if moved
        else None,
    )
    return WorkloadPlan(checks=(update,))


def attempt_note(current: CheckState, state: State) -> str:
    """ " (attempt 3 after 2 evictions)" on the Pending and Ready messages of a Workload
    that Kueue requeued after our Retry (its ``retryCount``); "" on a first attempt."""
    n = current.retry_count
    if n <= 0 or state not in ("Pending", "Ready"):
        return ""
    return f" (attempt {n + 1} after {n} eviction{'s' if n > 1 else ''})"

"""Repairing: k nodes of a claimed gang broke; the N−k healthy ones stay untouched, the k
are terminated, and k replacements come from one atomic launch (MinCount = MaxCount = k,
or an instant fleet of k) of the gang's shape: its instance type, zones, subnets,
placement group, reservation or Capacity Block, EFA. The replacements register with the
gang's pool and group labels and its taint, so the pods the check pinned land on them
with no new admission; the claimant's check stays Ready throughout (its message says
"repairing").

Crash safety is the first launch's. The repair is stored (phase Repairing, the broken
nodes) before anything is terminated; the launch uses ``acquireGeneration``, stored
before it and bumped only after a terminal answer, so its ClientTokens and generation
tag are the same after a crash or a leader change: the next try adopts what the first
one launched (a lookup by tag, then the token) instead of launching twice. A launch
whose outcome is unknown is recorded (``pendingLaunch``) and replayed first.

Where a repair cannot be made or finished (the claim opted out, more than
``repair.maxNodes`` broken at once, ``repair.maxRepairs`` used, nothing left to keep, the
replacements not Ready by ``repair.deadlineSeconds``, a launch that retrying cannot fix),
the whole set is released and the claimant gets Retry, as before repairs existed
(``degraded.enter``), with a message naming the limit.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from atomic_gang_provisioner.api import BrokenNode, GangNodePool, GangNodePoolStatus, RepairState
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    AwaitingReservation,
    Launched,
    ReleaseRequest,
    RepairLaunch,
    RetryLater,
    Waiting,
)
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import (
    Knobs,
    Observed,
    backoff_seconds,
    claim_key,
    health,
    seconds_until,
    update,
)
from atomic_gang_provisioner.pool.phases import acquiring, degraded, releasing
from atomic_gang_provisioner.pool.rules import block, spread
from atomic_gang_provisioner.pool.rules.health import Verdict, describe
from atomic_gang_provisioner.pool.story import (
    End,
    FindByTag,
    LabelNodes,
    Launch,
    Next,
    Part,
    Story,
    TaintNodes,
    Terminate,
    ask,
)


def refusal(pool: GangNodePool, status: GangNodePoolStatus, k: int, knobs: Knobs) -> str | None:
    """Why the broken gang is released whole rather than repaired (None: repair it)."""
    n = len(status.instanceIds)
    if not knobs.repair_enabled:
        return "repair is off in this cluster (repair.enabled: false)"
    if pool.spec.repair == "never":
        return "the Job opted out of repair (repair: never)"
    if k >= n:
        return f"all {n} nodes are broken, none to keep"
    return None


def limit(status: GangNodePoolStatus, k: int, knobs: Knobs) -> tuple[FailureReason, str] | None:
    """The repair limit ``k`` broken nodes hit, with what it says (None: within them)."""
    if k > knobs.repair_max_nodes:
        return FailureReason.REPAIR_TOO_MANY_NODES, (
            f"{k} nodes broke at once, more than repair.maxNodes ({knobs.repair_max_nodes})"
        )
    if status.repairs >= knobs.max_repairs:
        return FailureReason.REPAIR_LIMIT, (
            f"this claim had {status.repairs} repair(s) already, repair.maxRepairs "
            f"({knobs.max_repairs})"
        )
    return None


def begin(pool: GangNodePool, verdict: Verdict, *, observed: Observed, now: datetime) -> Story:
    """Nodes of the claimed, formed gang broke: taint them at once, then repair the gang
    in place, or release it whole when it may not be repaired."""
    status, broken, knobs = verdict.status, verdict.broken, observed.knobs
    k, n = len(broken), len(status.instanceIds)
    tainted = tuple(b.node for b in broken if b.node)
    if tainted:
        yield TaintNodes(tainted)
    why_not = refusal(pool, status, k, knobs)
    over = None if why_not is not None else limit(status, k, knobs)
    detail = verdict.message
    yield outcomes.NodesBroken(
        nodes=k, of=n, detail=detail, repairing=why_not is None and over is None
    )
    if why_not is not None:
        return (
            yield from degraded.enter(
                pool,
                status,
                reason=verdict.reason,
                message=f"{detail} ({why_not})",
                observed=observed,
                now=now,
            )
        )
    if over is not None:
        reason, said = over
        return (
            yield from _give_up(
                pool, status, broken, reason=reason, said=said, observed=observed, now=now
            )
        )
    repair = RepairState(broken=list(broken), startedAt=now)
    return Next(update(status, phase="Repairing", repair=repair, unhealthySince=None))


def story(pool: GangNodePool, observed: Observed, now: datetime) -> Story:
    status = pool.status
    repair = status.repair
    if repair is None:  # guard: nothing to repair (a status written by hand)
        return Next(update(status, phase="Satisfied"))
    if not claim_key(pool) or claim_key(pool) != status.claimKey:
        return (yield from _claim_gone(pool, status, observed, now))
    if block.draining(status, now, observed.knobs):  # the block ends: no repair outlives it
        found = yield from _unrecorded(status)
        ids = [*status.instanceIds, *found]
        drained = update(status, instanceIds=ids, repair=None)
        return (yield from degraded.drain(pool, drained, knobs=observed.knobs))
    doomed = tuple(b.instanceId for b in repair.broken if b.instanceId in status.instanceIds)
    if doomed or status.pendingEnis:
        status, done = yield from _terminate(status, doomed)
        if not done:  # a call failed, or ENIs still detach: terminate (again) first
            return End(status=status, requeue_after=observed.knobs.release_poll)
    deadline = repair.startedAt + observed.knobs.repair_deadline
    if now >= deadline:
        said = (
            f"the replacements were not all Ready within repair.deadlineSeconds "
            f"({observed.knobs.repair_deadline.total_seconds():.0f}s)"
        )
        reason = FailureReason.REPAIR_DEADLINE
        return (
            yield from _give_up(
                pool, status, repair.broken, reason=reason, said=said, observed=observed, now=now
            )
        )
    if not repair.replacements:
        return (
            yield from _launch(pool, status, repair, observed=observed, now=now, deadline=deadline)
        )
    return (yield from _rejoin(pool, status, repair, observed=observed, now=now, deadline=deadline))


def _terminate(
    status: GangNodePoolStatus, doomed: tuple[str, ...]
) -> Part[tuple[GangNodePoolStatus, bool]]:
    """The broken instances terminated (idempotent: a crash terminates them again), the
    rest of the set untouched; and whether that is done (no call failed, no ENI left)."""
    request = ReleaseRequest(instance_ids=doomed, enis=tuple(status.pendingEnis))
    result = yield from ask(Terminate(request, status))
    if result.reason is not None:  # nothing is known terminated: the ids stay recorded
        failed = update(status, lastError=result.message, pendingEnis=list(result.pending_enis))
        return failed, False
    kept = [i for i in status.instanceIds if i not in doomed]
    done = update(status, instanceIds=kept, pendingEnis=list(result.pending_enis))
    return done, result.done


def _launch(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    repair: RepairState,
    *,
    observed: Observed,
    now: datetime,
    deadline: datetime,
) -> Story:
    """One atomic launch of the k replacements (after the backoff of a failed one)."""
    wait = seconds_until(status.nextAttemptAt, now)
    if wait:
        return End(status=status, requeue_after=min(wait, seconds_until(deadline, now) or wait))
    request = request_for(pool, status, repair, observed.knobs)
    result = yield from ask(Launch(request, status))
    return (
        yield from _launched_or_not(
            pool, status, repair, request=request, result=result, observed=observed, now=now
        )
    )


def request_for(
    pool: GangNodePool, status: GangNodePoolStatus, repair: RepairState, knobs: Knobs
) -> AcquireRequest:
    """The gang's shape for k instances, in its zones and reservation, in its group."""
    spec = pool.spec.shape.gang_spec(pool=pool.name, keep_warm_ttl=pool.spec.keepWarmTTL)
    # The pool's own placement group keeps its name (the planner derives it from the
    # pool); a listed reservation gives way to the one the gang runs in.
    spec = spec.model_copy(
        update={
            "count": len(repair.broken),
            "capacity_reservation_id": status.reservationId or None,
        }
    )
    return AcquireRequest(
        spec=spec,
        generation=status.acquireGeneration,
        block_policy=block.policy(pool, knobs),
        waiting_since=repair.startedAt,
        replay=acquiring.replay_of(status),
        repair=RepairLaunch(zones=tuple(status.zones), group=status.activeGroup),
    )


def _launched_or_not(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    repair: RepairState,
    *,
    request: AcquireRequest,
    result: AcquireResult,
    observed: Observed,
    now: datetime,
) -> Story:
    knobs = observed.knobs
    if isinstance(result, Launched):
        ids = list(result.instance_ids)
        zones = tuple(sorted({i.availability_zone for i in result.instances}))
        yield outcomes.RepairLaunched(instance_ids=tuple(ids), zones=zones, adopted=result.adopted)
        fleets = [*status.fleetIds, *([result.fleet_id] if result.fleet_id else [])]
        launched = update(
            status,
            instanceIds=[*status.instanceIds, *ids],
            fleetIds=fleets,
            acquireGeneration=request.generation + 1,
            pendingLaunch=None,
            nextAttemptAt=None,
            lastError="",
            lastErrorReason=FailureReason.NONE,
            repair=repair.model_copy(update={"launchedAt": now, "replacements": ids}),
            networkNodes=None,  # read again for the whole set once the replacements join
            spread=0,
        )
        deadline = repair.startedAt + knobs.repair_deadline
        return End(status=launched, requeue_after=seconds_until(deadline, now))
    if isinstance(result, Waiting):
        waiting = update(status, lastError=result.message, lastErrorReason=result.reason)
        return End(status=waiting, requeue_after=result.retry_after)
    if isinstance(result, RetryLater):
        retry = update(
            status,
            lastError=f"{result.code}: {result.message}",
            lastErrorReason=result.reason,
            pendingLaunch=acquiring.pending_after(status, result, now),
        )
        return End(status=retry, requeue_after=result.retry_after or knobs.backoff_base)
    if not isinstance(result, AwaitingReservation) and result.reason.permanent:
        said = f"the replacements cannot be launched: {result.reason}: {result.message}"
        return (
            yield from _give_up(
                pool,
                status,
                repair.broken,
                reason=result.reason,
                said=said,
                observed=observed,
                now=now,
            )
        )
    attempt = repair.attempts + 1
    delay = backoff_seconds(
        pool=pool.name, attempt=attempt, base=knobs.backoff_base, cap=knobs.backoff_max
    )
    short = update(
        status,
        acquireGeneration=request.generation + 1,
        pendingLaunch=None,
        nextAttemptAt=now + timedelta(seconds=delay),
        lastError=result.message,
        lastErrorReason=result.reason,
        repair=repair.model_copy(update={"attempts": attempt}),
    )
    return End(status=short, requeue_after=delay)


def _rejoin(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    repair: RepairState,
    *,
    observed: Observed,
    now: datetime,
    deadline: datetime,
) -> Story:
    """The replacements join: the gang is whole again once all N are Ready (and hold the
    devices a pod asks for)."""
    claim = pool.spec.claim
    h = health(pool, observed, devices=claim.resources if claim is not None else None)
    n = len(status.instanceIds)
    if h.ready < n:
        return End(
            status=update(status, readyCount=h.ready), requeue_after=seconds_until(deadline, now)
        )
    # The whole set's topology is read again (the replacements' is new): max-spread and
    # the layer labels hold for the repaired gang as for the first one.
    placed = yield from spread.gate(pool, status, observed)
    if isinstance(placed, End):
        return placed
    if isinstance(placed, spread.TooWide):
        return (
            yield from _give_up(
                pool,
                placed.status,
                repair.broken,
                reason=spread.REASON,
                said=placed.message,
                observed=observed,
                now=now,
            )
        )
    if placed.labels:
        yield LabelNodes(placed.labels)
    status = placed.status
    started = repair.startedAt
    broke = min((b.since for b in repair.broken if b.since is not None), default=started)
    kept = [i for i in status.instanceIds if i not in repair.replacements]
    launched = status.launchedAt or started
    yield outcomes.NodesReplaced(
        pool=pool.name,
        replaced=tuple(b.instanceId for b in repair.broken),
        by=tuple(repair.replacements),
        reason=repair.broken[0].reason,
        seconds=(now - broke).total_seconds(),
        kept_instance_seconds=len(kept) * max(0.0, (started - launched).total_seconds()),
        repairs=status.repairs + 1,
    )
    return Next(
        update(
            status,
            phase="Satisfied",
            readyCount=n,
            repair=None,
            repairs=status.repairs + 1,
            unhealthySince=None,
        )
    )


def _give_up(
    pool: GangNodePool,
    status: GangNodePoolStatus,
    broken: list[BrokenNode] | tuple[BrokenNode, ...],
    *,
    reason: FailureReason,
    said: str,
    observed: Observed,
    now: datetime,
) -> Story:
    """A limit was hit: the whole set goes (an unrecorded replacement set too), and the
    claimant gets Retry with a message that names the limit."""
    found = yield from _unrecorded(status)
    if found:
        status = update(status, instanceIds=[*status.instanceIds, *found])
    detail = "; ".join(describe(b) for b in broken)
    message = f"Cannot repair the gang ({detail}): {said}"
    first = broken[0].reason if broken else ""
    yield outcomes.RepairGivenUp(pool=pool.name, reason=first, limit=reason, message=message)
    return (
        yield from degraded.enter(
            pool,
            update(status, repair=None),
            reason=reason,
            message=message,
            observed=observed,
            now=now,
        )
    )


def _unrecorded(status: GangNodePoolStatus) -> Part[tuple[str, ...]]:
    """A replacement launch whose answer was lost (a crash before its status was written,
    or an unknown outcome) may have made a set status never recorded: found by the tag of
    the generation it was sent at, so that it is released with the rest. A gang not yet
    repairing has launched nothing at that generation."""
    if status.repair is None:
        return ()
    found = yield from ask(FindByTag(status.acquireGeneration))
    return tuple(i.instance_id for i in found if i.instance_id not in status.instanceIds)


def _claim_gone(
    pool: GangNodePool, status: GangNodePoolStatus, observed: Observed, now: datetime
) -> Story:
    """The claim dropped mid-repair (the Job finished, or Kueue evicted it): a gang with
    a hole is kept warm for no one; the whole set goes."""
    found = yield from _unrecorded(status)
    ids = [*status.instanceIds, *found]
    return (
        yield from releasing.begin_quietly(
            pool,
            update(status, instanceIds=ids, repair=None),
            reason="RepairAbandoned",
            message="The claim was released during a repair; releasing the whole set",
            observed=observed,
            now=now,
        )
    )

"""The pool's status contract, from both ends: what the pool reports for a status
(pool.report), and what the Workload side reads of it (api.conditions)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from atomic_gang_provisioner.api import Condition, GangNodePool
from atomic_gang_provisioner.api import conditions as c
from atomic_gang_provisioner.pool import model
from atomic_gang_provisioner.pool.model import with_status
from atomic_gang_provisioner.pool.report import refresh
from tests.support.pools import KEY, KNOBS, T0, decide, launched, observed, pool, reported
from tests.unit.workload.test_decide import _claimed_pool, run


def facts(p: GangNodePool) -> dict[str, tuple[str, str]]:
    return {x.type: (x.status, x.reason) for x in reported(p).status.conditions}


def cond(p: GangNodePool, type_: c.ConditionType) -> Condition:
    found = c.condition(reported(p).status, type_)
    assert found is not None
    return found


def acquiring(**status: Any) -> GangNodePool:
    return pool(phase="Acquiring", claimKey=KEY, **status)


def test_every_condition_is_written_on_every_status() -> None:
    assert set(facts(pool(claim=None))) == set(c.MEANING)


@pytest.mark.parametrize(
    ("p", "true"),
    [
        pytest.param(pool(claim=None), {c.RELEASED}, id="idle-empty"),
        pytest.param(acquiring(), set(), id="acquiring"),
        pytest.param(launched(phase="Satisfied", readyCount=4), {c.READY}, id="satisfied"),
        pytest.param(
            acquiring(consecutiveShortfalls=1, lastErrorReason="InsufficientCapacity"),
            {c.CAPACITY_SHORTFALL},
            id="short-once",
        ),
        pytest.param(
            acquiring(consecutiveShortfalls=3, lastErrorReason="QuotaExceeded"),
            {c.CAPACITY_SHORTFALL, c.FAILED},
            id="attempts-exhausted",
        ),
        pytest.param(
            acquiring(consecutiveShortfalls=1, lastErrorReason="NodeRoleNotAuthorized"),
            {c.FAILED},
            id="permanent",
        ),
        pytest.param(
            launched(phase="Degraded", degradedClaimKey=KEY, lastErrorReason="InstanceLost"),
            {c.DEGRADED},
            id="degraded",
        ),
    ],
)
def test_which_conditions_are_true(p: GangNodePool, true: set[str]) -> None:
    assert {t for t, (status, _) in facts(p).items() if status == "True"} == true


def test_a_shortfall_names_the_attempt() -> None:
    short = cond(
        acquiring(consecutiveShortfalls=2, lastErrorReason="InsufficientCapacity", lastError="x"),
        c.CAPACITY_SHORTFALL,
    )
    assert (short.reason, short.message) == (
        "InsufficientCapacity",
        "Attempt 2/3 fell short: InsufficientCapacity: x",
    )


@pytest.mark.parametrize(
    ("reason", "verdict"),
    [
        pytest.param("InsufficientCapacity", "Retry", id="exhausted"),
        pytest.param("NodeRoleNotAuthorized", "Retry", id="node-role"),
        pytest.param("PermanentError", "Retry", id="permanent"),
        pytest.param("InvalidSubnet", "Rejected", id="the-jobs-fault"),
    ],
)
def test_failed_says_what_the_check_becomes(reason: str, verdict: str) -> None:
    failed = cond(acquiring(consecutiveShortfalls=3, lastErrorReason=reason), c.FAILED)
    assert (failed.status, failed.reason, failed.checkState) == ("True", reason, verdict)


def test_a_condition_keeps_its_transition_time_until_it_flips() -> None:
    p = pool(phase="Acquiring", claimKey=KEY)
    first = refresh(p, p.status, knobs=KNOBS, now=T0)
    later = T0 + timedelta(minutes=1)
    same = refresh(p, model.update(first, phase="Joining"), knobs=KNOBS, now=later)
    flipped = refresh(p, model.update(same, phase="Satisfied"), knobs=KNOBS, now=later)
    times = [c.condition(s, c.READY) for s in (first, same, flipped)]
    assert [t.lastTransitionTime for t in times if t] == [T0, T0, later]


def test_the_machine_writes_the_contract_on_every_decision() -> None:
    plan = decide(pool(), observed(), T0)
    assert {x.type for x in plan.status.conditions} == set(c.MEANING)
    assert all(x.observedGeneration == 1 for x in plan.status.conditions)


def test_the_reader_hears_only_what_is_said_to_its_own_claim() -> None:
    p = reported(launched(phase="Satisfied", readyCount=4))
    assert c.for_claim(p, KEY).ready == "4/4 nodes of group pretrain-g1 are Ready"
    assert c.for_claim(p, "another-claim").ready == ""
    newer = p.model_copy(update={"metadata": {**p.metadata, "generation": 2}})
    assert c.for_claim(newer, KEY).ready == ""  # not yet reconciled at this generation


def test_a_pool_never_reported_holds_nothing() -> None:
    """The Workload side creates a pool with an empty status: nothing was acquired yet."""
    fresh = pool(claim=None)
    assert c.holds_nothing(fresh)
    assert c.progress(fresh).startswith("Acquiring 4×p4d.24xlarge (runinstances, us-east-1a)")
    warm = reported(launched(phase="KeepWarm"))
    assert not c.holds_nothing(warm)
    assert not c.holds_nothing(with_status(warm, warm.status.model_copy(update={"phase": "Idle"})))


@pytest.mark.parametrize(
    ("type_", "check_state", "state"),
    [
        pytest.param(c.FAILED, "Rejected", "Rejected", id="failed-rejected"),
        pytest.param(c.FAILED, "Retry", "Retry", id="failed-retry"),
        pytest.param(c.READY, None, "Pending", id="waiting"),
    ],
)
def test_a_new_reason_needs_no_change_on_the_workload_side(
    type_: c.ConditionType, check_state: Any, state: str
) -> None:
    """The seam later issues build on: the pool says something new (a capacity block
    that ended, one not started yet) and the check follows it as it is."""
    p = _claimed_pool(phase="Acquiring", instanceIds=[])
    said = Condition(
        type=type_,
        status="True" if type_ == c.FAILED else "False",
        reason="CapacityBlockNotActive",
        message="The capacity block cr-1 is not active",
        lastTransitionTime=T0,
        observedGeneration=p.generation,
        checkState=check_state,
    )
    others = [x for x in p.status.conditions if x.type != type_]
    told = model.update(p.status, conditions=sorted([*others, said], key=lambda x: x.type))
    (update,) = run(pool=with_status(p, told)).checks
    assert (update.state, update.message) == (state, "The capacity block cr-1 is not active")

"""The controller killed during acquisition (EC2's ClientToken
hands the set back, never a second one), and the leader killed (the standby finishes)."""

from __future__ import annotations

import pytest

from atomic_gang_devstack import procs
from tests.e2e.names import gnp
from tests.e2e.system.conftest import unique
from tests.e2e.system.harness import (
    REPLICAS,
    System,
    assert_no_managed_instances_left,
    crashing_leader,
    sample_job,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
CRASH = {"ATOMIC_GANG_FAULT_CRASH_AFTER_LAUNCH": "1"}


def test_controller_killed_during_acquisition_adopts_the_launched_set(
    replicas_back: System, namespace: str
) -> None:
    system = replicas_back
    crashy = crashing_leader(system, "crashy")
    label = unique("crash")
    pool = gnp(namespace, label)
    job = system.world.submit(sample_job("crash", namespace, pool=label, keep_warm_ttl="2s"))
    wait_for(lambda: procs.exit_code(crashy) is not None, timeout=60, what="the crash")
    launched = system.world.live(pool)
    assert len(launched) == 4  # EC2 launched them; the status never recorded them
    p = system.world.pool(pool)
    assert p is not None
    assert p.status.instanceIds == []

    system.revive()
    p = system.world.wait_pool(
        pool, lambda q: len(q.status.instanceIds) == 4, timeout=60, what="the set adopted"
    )
    assert sorted(p.status.instanceIds) == launched
    wait_for(lambda: system.complete(job), timeout=90, what="the Job complete")
    assert system.ever_launched(pool) == launched  # never a second set
    ok = [c for c in system.controller_calls("RunInstances", pool) if c["outcome"] == "ok"]
    assert len(ok) >= 1
    assert {c["params"]["ClientToken"] for c in ok} == {ok[0]["params"]["ClientToken"]}
    assert_no_managed_instances_left(system)


def test_killing_the_leader_mid_acquisition_leaves_the_standby_to_finish(
    replicas_back: System, namespace: str
) -> None:
    system = replicas_back
    leader = wait_for(system.leader, timeout=30, what="a leader")
    standby = next(r for r in REPLICAS if r != leader)
    system.sim.set_boot_delay(6.0)  # the kill lands while the set is joining
    try:
        label = unique("failover")
        pool = gnp(namespace, label)
        job = system.world.submit(sample_job("failover", namespace, pool=label, keep_warm_ttl="2s"))
        system.world.wait_pool(pool, lambda p: p.status.phase == "Joining", what="Joining")
        system.kill(leader)
        wait_for(lambda: system.leader() == standby, timeout=20, what="the standby leading")
        wait_for(lambda: system.complete(job), timeout=90, what="the Job complete")
    finally:
        system.sim.set_boot_delay(1.0, jitter=1.0)
    assert len(system.ever_launched(pool)) == 4
    assert (
        len([c for c in system.controller_calls("RunInstances", pool) if c["outcome"] == "ok"]) == 1
    )
    assert_no_managed_instances_left(system)

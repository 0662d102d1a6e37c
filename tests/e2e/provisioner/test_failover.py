"""Issue 5 acceptance: crash idempotency (SIGKILL between "EC2 returned" and "status
persisted") and leader failover in the middle of an acquisition: never a second set."""

from __future__ import annotations

import time

import pytest

from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import job, unique
from tests.e2e.provisioner.harness import World
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
CRASH = {"ATOMIC_GANG_FAULT_CRASH_AFTER_LAUNCH": "1"}


def test_crash_after_launch_adopts_instead_of_launching_again(
    world: World, tmp_path_factory: pytest.TempPathFactory, namespace: str
) -> None:
    reps = world.replicas(tmp_path_factory.mktemp("prov-crash"), unique("lease"))
    try:
        reps.start("crashy", **CRASH)
        wait_for(
            lambda: world.lease_holder(reps.lease).startswith("crashy"),
            timeout=30,
            what="crashy leading",
        )
        label = unique("crash")
        pool = gnp(namespace, label)
        world.submit(job("crash", namespace, pool=label))
        wait_for(lambda: reps.exited("crashy") is not None, timeout=60, what="the crash")
        assert reps.exited("crashy") == 137
        launched = world.live(pool)
        assert len(launched) == 4  # EC2 did launch; nothing recorded it
        p = world.pool(pool)
        assert p is not None
        assert p.status.instanceIds == []
        reps.forget("crashy")
        reps.start("healer")
        p = world.wait_pool(
            pool, lambda q: q.status.phase == "Joining", timeout=60, what="the set adopted"
        )
        assert sorted(p.status.instanceIds) == launched
        assert world.live(pool) == launched  # no second set
        assert len([c for c in world.launches(pool) if c["outcome"] == "ok"]) == 1
        adopted = 'atomic_gang_acquisitions_total{mode="runinstances",result="adopted"} 1.0'
        assert adopted in reps.metrics("healer")
    finally:
        reps.stop_all()


def test_leader_failover_mid_acquisition_launches_once(
    world: World, tmp_path_factory: pytest.TempPathFactory, namespace: str
) -> None:
    reps = world.replicas(tmp_path_factory.mktemp("prov-failover"), unique("lease"))
    try:
        reps.start("leader", **CRASH)
        wait_for(
            lambda: world.lease_holder(reps.lease).startswith("leader"),
            timeout=30,
            what="leader leading",
        )
        reps.start("standby")
        wait_for(lambda: reps.ready("standby"), timeout=30, what="the standby campaigning")
        label = unique("failover")
        pool = gnp(namespace, label)
        submitted = world.submit(job("failover", namespace, pool=label))
        wait_for(lambda: reps.exited("leader") is not None, timeout=60, what="the leader dying")
        died = time.monotonic()
        reps.forget("leader")
        wait_for(
            lambda: world.lease_holder(reps.lease).startswith("standby"),
            timeout=10,
            what="the standby taking over",
        )
        took_over = time.monotonic() - died
        assert took_over <= 3 + 1.5  # lease duration + a retry period and a write
        p = world.wait_pool(
            pool,
            lambda q: q.status.phase == "Joining",
            timeout=60,
            what="Joining under the new leader",
        )
        assert world.live(pool) == sorted(p.status.instanceIds)
        assert len(world.live(pool)) == 4
        world.register_nodes(p)
        world.wait_check(submitted, "Ready")
    finally:
        reps.stop_all()


def test_killed_leader_is_replaced_within_the_lease(
    world: World, tmp_path_factory: pytest.TempPathFactory, namespace: str
) -> None:
    reps = world.replicas(tmp_path_factory.mktemp("prov-kill"), unique("lease"))
    try:
        reps.start("one")
        wait_for(
            lambda: world.lease_holder(reps.lease).startswith("one"), timeout=30, what="one leading"
        )
        reps.start("two")
        wait_for(
            lambda: "atomic_gang_leader 0.0" in reps.metrics("two"),
            timeout=30,
            what="two serving as standby",
        )
        assert "atomic_gang_leader 1.0" in reps.metrics("one")
        reps.kill("one")
        killed = time.monotonic()
        wait_for(
            lambda: world.lease_holder(reps.lease).startswith("two"),
            timeout=10,
            what="two taking over",
        )
        assert time.monotonic() - killed <= 3 + 1.5
        label = unique("after")
        pool = gnp(namespace, label)
        submitted = world.submit(job("after", namespace, pool=label))
        p = world.wait_pool(pool, lambda q: q.status.phase == "Joining", what="Joining")
        world.register_nodes(p)
        world.wait_check(submitted, "Ready")
        assert "atomic_gang_leader 1.0" in reps.metrics("two")
    finally:
        reps.stop_all()

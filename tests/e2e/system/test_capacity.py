"""A capacity shortfall costs nothing, says why, and resolves."""

from __future__ import annotations

import pytest

from tests.e2e.names import gnp
from tests.e2e.system.conftest import unique
from tests.e2e.system.harness import System, assert_no_managed_instances_left, sample_job
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
ZONE, TYPE = "us-east-1b", "p4d.24xlarge"


def test_shortfall_launches_nothing_until_capacity_suffices(system: System, namespace: str) -> None:
    label = unique("short")
    pool = gnp(namespace, label)
    system.fake.set_capacity(ZONE, TYPE, 3)  # a 4-gang does not fit
    try:
        job = system.world.submit(
            sample_job("short", namespace, pool=label, availability_zones=ZONE, keep_warm_ttl="2s")
        )
        system.world.wait_pool(
            pool, lambda p: p.status.consecutiveShortfalls >= 3, what="repeated shortfalls"
        )
        attempts = system.controller_calls("RunInstances", pool)
        assert len(attempts) >= 3
        assert {c["outcome"] for c in attempts} == {"error:InsufficientInstanceCapacity"}
        assert system.ever_launched(pool) == []  # not one instance, in any state
        assert system.pods(namespace) == []
        wl = system.world.workload(job)
        assert wl is not None
        described = system.kubectl.run(
            "describe", "workload", wl["metadata"]["name"], "-n", namespace
        ).stdout
        assert "InsufficientInstanceCapacity" in described
        assert "nothing billed" in described

        system.fake.set_capacity(ZONE, TYPE, 4)
        wait_for(lambda: system.complete(job), timeout=120, what="the Job complete")
        ok = [c for c in system.controller_calls("RunInstances", pool) if c["outcome"] == "ok"]
        assert len(ok) == 1
        assert len(system.ever_launched(pool)) == 4
    finally:
        system.fake.set_capacity(ZONE, TYPE, None)
    assert_no_managed_instances_left(system)

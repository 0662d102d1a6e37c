"""Issue 5: a leader whose Lease is taken away stops at once. The process exits 1
(as controller-runtime does) within the renew deadline, and never writes the
Lease again. Its own module: no other replica runs beside it."""

from __future__ import annotations

import time

import pytest

from atomic_gang_provisioner.kube.lease import micro_time
from tests.e2e.provisioner.conftest import unique
from tests.e2e.provisioner.harness import LEASES, World
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
RENEW_DEADLINE = 2.0  # World.replicas: leaseDuration 3 s, renewDeadline 2 s, retry 0.25 s
MARGIN = 4.0  # a read, a conflicting write and process exit, on a busy machine


def test_a_leader_that_loses_its_lease_exits_1_and_writes_no_more(
    world: World, tmp_path_factory: pytest.TempPathFactory
) -> None:
    reps = world.replicas(tmp_path_factory.mktemp("prov-lease-loss"), unique("lease"))
    try:
        reps.start("victim")
        wait_for(
            lambda: world.lease_holder(reps.lease).startswith("victim"),
            timeout=30,
            what="victim leading",
        )
        wait_for(
            lambda: "atomic_gang_leader 1.0" in reps.metrics("victim"),
            timeout=30,
            what="victim's reconcilers on",
        )
        now = micro_time()
        stolen = world.kube.patch(
            LEASES,
            reps.lease,
            {
                "spec": {
                    "holderIdentity": "thief",
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseDurationSeconds": 3600,
                }
            },
            namespace="default",
        )
        taken = time.monotonic()
        wait_for(
            lambda: reps.exited("victim") is not None,
            timeout=RENEW_DEADLINE + 30,
            interval=0.02,
            what="the victim to exit",
        )
        took = time.monotonic() - taken
        assert reps.exited("victim") == 1
        assert took <= RENEW_DEADLINE + MARGIN, took
        lease = world.kube.get(LEASES, reps.lease, namespace="default")
        assert lease["metadata"]["resourceVersion"] == stolen["metadata"]["resourceVersion"]
        assert lease["spec"]["holderIdentity"] == "thief"
        assert "lost the leader lease; exiting" in reps.log("victim")
    finally:
        reps.stop_all()

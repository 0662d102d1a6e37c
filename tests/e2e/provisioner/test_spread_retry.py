"""max-spread that never fits: after acquireAttemptsBeforeRetry spread gangs, each
released whole before any pod, the check goes to Retry and Kueue requeues the Job;
nothing is left billing and the pool's placement group goes once it holds nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from atomic_gang.resources import EVENTS
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import unique
from tests.e2e.provisioner.harness import Replicas, World, iter_pods
from tests.e2e.provisioner.test_network import group_of, joining, network_job
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def replica(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    reps = world.replicas(
        tmp_path_factory.mktemp("prov-spread"), unique("lease"), acquireAttemptsBeforeRetry=2
    )
    reps.start("spread-a")
    wait_for(lambda: world.lease_holder(reps.lease).startswith("spread-a"), timeout=30)
    yield reps
    reps.stop_all()


def test_a_gang_that_never_fits_max_spread_gives_up_with_retry(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("wide")
    pool = gnp(namespace, label)
    world.fake.set_topology_node_size(2, group=group_of(pool))  # every gang of 4 spans 2
    submitted = world.submit(network_job("wide", namespace, pool=label, max_spread="1"))
    registered: list[str] = []
    generation = 0
    for _ in range(2):
        current = joining(world, pool, generation)
        generation = current.status.activeGeneration
        registered += world.register_nodes(current)

    def requeued() -> dict[str, Any] | None:
        wl = world.workload(submitted) or {}
        return wl if (wl.get("status") or {}).get("requeueState") else None

    wait_for(requeued, timeout=90, what="Kueue requeue after Retry")

    def gave_up() -> bool:  # the Event is sent after the apply Kueue may already act on
        return any(
            e["reason"] == "GangRetry"
            and "2 consecutive failed attempts" in e["message"]
            and "TopologySpread" in e["message"]
            for e in world.kube.list(EVENTS, namespace=namespace).items
        )

    wait_for(gave_up, timeout=30, what="the GangRetry Event naming the attempts and the spread")
    assert list(iter_pods(world, namespace)) == []  # no pod ever ran on a spread gang
    world.wait_pool(pool, lambda p: not p.status.instanceIds, what="nothing recorded")
    assert world.live(pool) == []
    world.fake.set_topology_node_size(None, group=group_of(pool))
    world.delete_nodes(registered)

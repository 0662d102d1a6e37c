"""Issue 5: a Workload that disappears while no provisioner runs still releases its
claim. The next leader sees the pool's claimant missing from its cache and frees
the pool (``WorkloadReconciler._release_orphaned_claims``)."""

from __future__ import annotations

import pytest

from atomic_gang.resources import JOBS, POOLS
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import job, unique
from tests.e2e.provisioner.harness import World
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e


def test_a_workload_deleted_while_down_releases_its_claim(
    world: World, tmp_path_factory: pytest.TempPathFactory, namespace: str
) -> None:
    reps = world.replicas(
        tmp_path_factory.mktemp("prov-orphan"), unique("lease"), joinDeadlineSeconds=300
    )
    label = unique("orphan")
    pool = gnp(namespace, label)
    try:
        reps.start("before")
        submitted = world.submit(job("orphan", namespace, pool=label))
        p = world.wait_pool(pool, lambda q: q.status.phase == "Joining", timeout=90, what="Joining")
        assert p.spec.claim is not None
        reps.stop_all()
        world.kube.delete(JOBS, "orphan", namespace=namespace, propagation="Background")
        wait_for(
            lambda: world.workload(submitted) is None, timeout=60, what="the Workload to be gone"
        )
        claimed = world.pool(pool)
        assert claimed is not None
        assert claimed.spec.claim is not None  # nobody ran to release it
        reps.start("after")
        released = world.wait_pool(
            pool, lambda q: q.spec.claim is None, timeout=90, what="the orphaned claim released"
        )
        assert released.metadata["uid"] == p.metadata["uid"]
        wait_for(  # logged just after the patch the test saw: no read-once race
            lambda: "released the claim of a deleted Workload" in reps.log("after"),
            timeout=15,
            what="the orphaned-claim release logged",
        )
        world.kube.delete(POOLS, pool)
        wait_for(lambda: world.pool(pool) is None, timeout=60, what="the pool finalized")
        assert world.live(pool) == []
    finally:
        reps.stop_all()

"""Issue 5 observability on the real control plane: /healthz, the /metrics
families after the events that feed them, the server-side-apply footprint of our
check state on the Workload, and a deleted Job's claim being released."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from atomic_gang.resources import JOBS, POOLS
from atomic_gang_provisioner.kube import NotFoundError
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import job, unique
from tests.e2e.provisioner.harness import CHECK, Replicas, World
from tests.support.scrape import Scrape
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
NAME = "prov-ops"
CONTROLLER = "atomic-gang.k8s.aws/ec2-atomic"
P = "atomic_gang_"


@pytest.fixture(scope="module")
def replica(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    reps = world.replicas(
        tmp_path_factory.mktemp("prov-ops"), unique("lease"), joinDeadlineSeconds=300
    )
    reps.start(NAME)
    wait_for(
        lambda: world.lease_holder(reps.lease).startswith(NAME), timeout=30, what=f"{NAME} leading"
    )
    yield reps
    reps.stop_all()


def scrape(reps: Replicas) -> Scrape:
    return Scrape.parse(reps.metrics(NAME))


def scraped(reps: Replicas, name: str, at_least: float, **labels: str) -> Scrape | None:
    s = scrape(reps)
    value = s.value(name, **labels)
    return s if value is not None and value >= at_least else None


def delete_job(world: World, submitted: dict[str, Any]) -> None:
    meta = submitted["metadata"]
    with contextlib.suppress(NotFoundError):
        world.kube.delete(JOBS, meta["name"], namespace=meta["namespace"], propagation="Background")


def test_healthz_and_the_always_present_families(world: World, replica: Replicas) -> None:
    resp = httpx.get(f"http://127.0.0.1:{replica.ports[NAME]}/healthz", timeout=10)
    assert resp.status_code == 200
    s = scrape(replica)
    assert s.families[P + "queue_depth"] == "gauge"
    depths = s.with_name(P + "queue_depth")
    assert {dict(lab)["controller"] for lab in depths} >= {"pool", "workload", "admissioncheck"}
    assert all(v >= 0 for v in depths.values())
    assert s.families[P + "reconcile_errors"] == "counter"
    assert all(v >= 0 for v in s.with_name(P + "reconcile_errors_total").values())
    assert s.value(P + "leader") == 1.0


def managed_by_us(wl: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m
        for m in wl["metadata"].get("managedFields") or []
        if m.get("manager") == CONTROLLER
        and m.get("operation") == "Apply"
        and m.get("subresource") == "status"
    ]


def test_happy_path_reuse_and_release_feed_the_metrics(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("ops")
    pool = gnp(namespace, label)
    first = world.submit(job("first", namespace, pool=label, keep_warm_ttl="1h"))
    p = world.wait_pool(pool, lambda q: q.status.phase == "Joining", what="Joining")
    nodes = world.register_nodes(p)
    try:
        world.wait_check(first, "Ready")
        wl = world.workload(first)
        assert wl is not None
        [entry] = managed_by_us(wl)
        owned = entry["fieldsV1"]["f:status"]["f:admissionChecks"]
        assert f'k:{{"name":"{CHECK}"}}' in owned  # the list entry of our check, nothing else
        s = wait_for(
            lambda: scraped(replica, P + "join_duration_seconds_count", 1),
            timeout=30,
            what="join_duration observed",
        )
        assert s.value(P + "time_to_satisfied_seconds_count") == 1.0
        assert (s.value(P + "time_to_satisfied_seconds_sum") or 0) > 0
        assert (s.value(P + "join_duration_seconds_sum") or 0) > 0
        assert s.value(P + "keep_warm_reuses_total") == 0.0
        assert (s.value(P + "admission_check_transitions_total", state="Ready") or 0) >= 1

        world.wait_pool(pool, lambda q: q.status.phase == "KeepWarm", what="KeepWarm")
        second = world.submit(job("second", namespace, pool=label, runs_for="1h"))
        world.wait_check(second, "Ready", timeout=60)
        s = wait_for(
            lambda: scraped(replica, P + "keep_warm_reuses_total", 1),
            timeout=30,
            what="a keep-warm reuse counted",
        )
        assert s.value(P + "keep_warm_reuses_total") == 1.0
        assert s.value(P + "time_to_satisfied_seconds_count") == 1.0  # no second acquisition
        assert len(world.launches(pool)) == 1

        delete_job(world, second)
        released = world.wait_pool(
            pool, lambda q: q.spec.claim is None, timeout=60, what="the claim released"
        )
        assert released.status.phase in {"Satisfied", "KeepWarm"}
    finally:
        with contextlib.suppress(NotFoundError):
            world.kube.delete(POOLS, pool)  # the finalizer terminates the warm set
        world.delete_nodes(nodes)


def test_a_shortfall_is_counted_by_reason(world: World, replica: Replicas, namespace: str) -> None:
    label = unique("ops-short")
    pool = gnp(namespace, label)
    world.fake.set_capacity("us-east-1c", "c5.large", 0)
    submitted = world.submit(
        job(
            "short",
            namespace,
            pool=label,
            instance_type="c5.large",
            availability_zones="us-east-1c",
        )
    )
    try:
        p = world.wait_pool(pool, lambda q: q.status.consecutiveShortfalls >= 1, what="a shortfall")
        # The next reconcile may already wait for the short cell's own probe (5 s).
        assert p.status.lastErrorReason in ("InsufficientCapacity", "WaitingForCapacity")
        s = wait_for(
            lambda: scraped(replica, P + "shortfalls_total", 1, reason="InsufficientCapacity"),
            timeout=30,
            what="the shortfall counted",
        )
        failed = s.value(P + "acquisitions_total", mode="runinstances", result="capacity")
        assert (failed or 0) >= 1
        assert world.live(pool) == []
    finally:
        delete_job(world, submitted)
        world.wait_pool(pool, lambda q: q.spec.claim is None, what="the claim released")
        world.kube.delete(POOLS, pool)

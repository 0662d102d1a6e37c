"""On the complete stack: the sample Job end to end,
fleet mode across AZs, warm reuse."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang.resources import POOLS
from atomic_gang_provisioner.kube import KubeClient
from tests.e2e.names import gnp
from tests.e2e.system.conftest import unique
from tests.e2e.system.harness import (
    System,
    admitted_only_on_full_gang,
    assert_no_managed_instances_left,
    assert_warm_reuse_fast,
    condition,
    sample_job,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e


def _at(cond: dict[str, Any] | None) -> datetime:
    assert cond is not None
    return datetime.fromisoformat(str(cond["lastTransitionTime"]).replace("Z", "+00:00"))


class PhaseLog:
    """Every phase one pool passes through, from a watch (a poll could miss a short
    phase); ``<deleted>`` when the object goes."""

    def __init__(self, kube: KubeClient, pool: str) -> None:
        selector = f"metadata.name={pool}"
        listing = kube.list(POOLS, field_selector=selector)
        self.phases: list[str] = []
        self._stream = kube.watch(
            POOLS, resource_version=listing.resource_version, field_selector=selector
        )
        self._thread = threading.Thread(target=self._run, name="phase-log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # closing the stream ends the iteration
            for ev in self._stream:
                if ev["type"] == "DELETED":
                    self._note("<deleted>")
                elif ev["type"] in ("ADDED", "MODIFIED"):
                    self._note(str((ev["object"].get("status") or {}).get("phase") or ""))

    def _note(self, phase: str) -> None:
        if phase and (not self.phases or self.phases[-1] != phase):
            self.phases.append(phase)

    def close(self) -> None:
        self._stream.close()
        self._thread.join(timeout=10)


@contextlib.contextmanager
def phase_log(kube: KubeClient, pool: str) -> Iterator[PhaseLog]:
    log = PhaseLog(kube, pool)
    try:
        yield log
    finally:
        log.close()


def in_order(seen: Sequence[str], *wanted: tuple[str, ...]) -> bool:
    """``seen`` holds one of each group of ``wanted``, group after group."""
    i = 0
    for group in wanted:
        while i < len(seen) and seen[i] not in group:
            i += 1
        if i == len(seen):
            return False
        i += 1
    return True


def test_in_order() -> None:
    assert in_order(["Satisfied", "KeepWarm", "Releasing", "Idle"], ("KeepWarm",), ("Releasing",))
    assert not in_order(["Releasing", "KeepWarm", "Idle"], ("KeepWarm",), ("Releasing",))
    assert not in_order(["KeepWarm", "Idle"], ("KeepWarm",), ("Releasing",), ("Idle",))


def _admitted(system: System, job: dict[str, Any]) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        wl = system.world.workload(job)
        return wl if condition(wl, "Admitted") else None

    return wait_for(probe, timeout=90, what="the Workload admitted")


def test_the_sample_job_end_to_end(system: System, namespace: str) -> None:
    label = unique("pretrain")
    pool = gnp(namespace, label)
    with (
        phase_log(system.kube, pool) as phases,
        admitted_only_on_full_gang(system, namespace, job="allreduce-pretrain", pool=pool),
    ):
        _sample_job_end_to_end(system, namespace, label)
    # The pool goes KeepWarm, then Releasing, then Idle (or away).
    assert in_order(
        phases.phases, ("Satisfied",), ("KeepWarm",), ("Releasing",), ("Idle", "<deleted>")
    ), phases.phases


def _sample_job_end_to_end(system: System, namespace: str, label: str) -> None:
    pool = gnp(namespace, label)
    spec = sample_job("allreduce-pretrain", namespace, pool=label, keep_warm_ttl="4s")
    assert "job.batch/allreduce-pretrain created" in system.kubectl.apply(spec).stdout
    job = system.job(spec)
    wl = _admitted(system, job)
    nodes = system.gang_nodes(pool)
    ready = {name: _at(condition(n, "Ready")) for name, n in nodes.items() if condition(n, "Ready")}
    assert len(ready) == 4
    # Admitted only once all 4 were Ready (Kueue and kwok stamp these transitions).
    assert max(ready.values()) <= _at(condition(wl, "Admitted"))
    pool_obj = system.world.pool(pool)
    assert pool_obj is not None
    group = pool_obj.status.activeGroup
    check = system.world.check(job)
    assert check["state"] == "Ready"
    assert check["podSetUpdates"][0]["nodeSelector"] == {keys.POOL: pool, keys.GROUP: group}
    assert {n["metadata"]["labels"][keys.GROUP] for n in nodes.values()} == {group}

    wait_for(lambda: system.complete(job), timeout=90, what="the Job complete")
    placed = [p["spec"]["nodeName"] for p in system.pods(namespace)]
    assert sorted(placed) == sorted(nodes)  # one pod on each gang node, none elsewhere

    system.world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm")
    system.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")

    # Events are written asynchronously by the controller's recorder: wait for both.
    def both_events() -> list[str] | None:
        got = [x for x, _ in system.pool_events(pool)]
        return got if {"KeepWarmExpired", "Released"} <= set(got) else None

    reasons = wait_for(both_events, timeout=30, what="the KeepWarmExpired and Released events")
    assert reasons.index("KeepWarmExpired") < reasons.index("Released")
    assert system.world.live(pool) == []
    wait_for(lambda: not system.gang_nodes(pool), timeout=30, what="the gang's Nodes deleted")

    launches = system.controller_calls("RunInstances", pool)
    assert [(c["params"]["MinCount"], c["params"]["MaxCount"]) for c in launches] == [("4", "4")]
    terminated = {
        v for c in system.controller_calls("TerminateInstances") for v in c["params"].values()
    }
    assert set(pool_obj.status.instanceIds) <= terminated
    assert_no_managed_instances_left(system)


def test_fleet_mode_spans_zones_and_completes(system: System, namespace: str) -> None:
    label = unique("fleet")
    pool = gnp(namespace, label)
    caps = {"us-east-1a": 2, "us-east-1b": 2, "us-east-1c": 0}
    for zone, count in caps.items():
        system.fake.set_capacity(zone, "p5.48xlarge", count)
    try:
        spec = sample_job(
            "fleet",
            namespace,
            pool=label,
            mode="fleet",
            instance_type="p5.48xlarge",
            availability_zones="us-east-1a,us-east-1b,us-east-1c",
        )
        job = system.world.submit(spec)
        wait_for(lambda: system.complete(job), timeout=120, what="the fleet Job complete")
        zones = {
            n["metadata"]["labels"]["topology.kubernetes.io/zone"]
            for n in system.gang_nodes(pool).values()
        }
        assert zones == {"us-east-1a", "us-east-1b"}
        fleets = system.controller_calls("CreateFleet", pool)
        assert [c["outcome"] for c in fleets] == ["ok"]
        assert fleets[0]["params"]["OnDemandOptions.MinTargetCapacity"] == "4"
        assert system.controller_calls("RunInstances", pool) == []
        on = {p["spec"]["nodeName"] for p in system.pods(namespace)}
        assert on == set(system.gang_nodes(pool))
        assert_no_managed_instances_left(system)
    finally:
        for zone in caps:
            system.fake.set_capacity(zone, "p5.48xlarge", None)


def test_warm_reuse_admits_the_next_job_without_a_launch(
    system: System, namespace: str, record_property: Any
) -> None:
    label = unique("warm")
    pool = gnp(namespace, label)
    first = system.world.submit(sample_job("first", namespace, pool=label, keep_warm_ttl="10m"))
    wait_for(lambda: system.complete(first), timeout=90, what="the first Job complete")
    system.world.wait_pool(pool, lambda p: p.status.phase == "KeepWarm", what="KeepWarm")
    warm_nodes = set(system.gang_nodes(pool))
    before = len(system.fake.calls())

    t0 = time.monotonic()
    second = system.world.submit(sample_job("second", namespace, pool=label, keep_warm_ttl="2s"))
    _admitted(system, second)
    elapsed = time.monotonic() - t0
    record_property("warm_reuse_admission_seconds", round(elapsed, 2))
    assert_warm_reuse_fast(elapsed)

    later = [c for c in system.fake.calls()[before:] if c["caller"] == "testing"]
    assert not [c for c in later if c["action"] in ("RunInstances", "CreateFleet")]
    assert "KeepWarmReused" in [r for r, _ in system.pool_events(pool)]
    wait_for(lambda: system.complete(second), timeout=90, what="the second Job complete")
    second_pods = [p for p in system.pods(namespace) if p["metadata"]["name"].startswith("second")]
    assert {p["spec"]["nodeName"] for p in second_pods} == warm_nodes
    system.world.wait_pool(pool, lambda p: p.status.phase == "Idle", timeout=60, what="released")
    assert system.world.live(pool) == []
    assert_no_managed_instances_left(system)

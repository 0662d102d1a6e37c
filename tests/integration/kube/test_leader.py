"""Leader election on a real Lease: one leader, prompt step-down, takeover, release."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from atomic_gang.settings import LeaderElection
from atomic_gang_provisioner.kube import (
    KubeClient,
    LeaderElectionConfig,
    LeaderElector,
    TransportError,
)
from atomic_gang_provisioner.kube.objects import KubeObject
from tests.integration.kube.conftest import FIGURES, ControlPlane
from tests.integration.kube.timings import DURATION, RENEW, RETRY
from tests.support import resources as r
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube
REPO = Path(__file__).resolve().parents[3]


@dataclass
class Timeline:
    """When each candidate started and stopped leading (monotonic seconds)."""

    spans: dict[str, list[list[float]]] = field(default_factory=dict)
    lock: threading.Condition = field(default_factory=threading.Condition)

    def started(self, who: str) -> None:
        with self.lock:
            self.spans.setdefault(who, []).append([time.monotonic(), float("inf")])
            self.lock.notify_all()

    def leads(self, who: str, timeout: float) -> bool:
        """Wait until ``who`` is told it leads (its on_started_leading, as the manager is)."""
        with self.lock:
            return self.lock.wait_for(lambda: bool(self.spans.get(who)), timeout)

    def stopped(self, who: str) -> None:
        with self.lock:
            self.spans[who][-1][1] = time.monotonic()

    def leaders(self) -> list[str]:
        with self.lock:
            return [w for w, s in self.spans.items() if s and s[-1][1] == float("inf")]

    def assert_no_overlap(self) -> None:
        with self.lock:
            spans = sorted((a, b, w) for w, ss in self.spans.items() for a, b in ss)
        for (_, end, who), (start, _, nxt) in itertools.pairwise(spans):
            assert end <= start, f"{who} still led when {nxt} started"


class Cuttable(KubeClient):
    """The real client; once ``cut`` is set, the elector's reads and writes fail."""

    def __init__(self, inner: KubeClient) -> None:
        super().__init__(inner.transport, timeout=inner.timeout)
        self.cut = threading.Event()

    def _check(self) -> None:
        if self.cut.is_set():
            raise TransportError("partitioned by the test")

    def get(self, *a: Any, **kw: Any) -> KubeObject:
        self._check()
        return super().get(*a, **kw)

    def replace(self, *a: Any, **kw: Any) -> KubeObject:
        self._check()
        return super().replace(*a, **kw)

    def create(self, *a: Any, **kw: Any) -> KubeObject:
        self._check()
        return super().create(*a, **kw)


class Electors:
    """Makes candidates for one fresh Lease; stops them all at teardown."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.client, self.namespace = client, namespace
        self.lease = f"lease-{uuid.uuid4().hex[:6]}"
        self.made: list[LeaderElector] = []

    def __call__(self, who: str, timeline: Timeline, c: KubeClient | None = None) -> LeaderElector:
        config = LeaderElectionConfig(
            lease_name=self.lease,
            namespace=self.namespace,
            identity=who,
            lease_duration=DURATION,
            renew_deadline=RENEW,
            retry_period=RETRY,
        )
        e = LeaderElector(
            c or self.client,
            config,
            on_started_leading=lambda: timeline.started(who),
            on_stopped_leading=lambda: timeline.stopped(who),
        )
        self.made.append(e)
        e.start()
        return e


@pytest.fixture
def make(client: KubeClient, namespace: str) -> Iterator[Electors]:
    electors = Electors(client, namespace)
    yield electors
    for e in electors.made:
        e.stop()


def until(cond: Any, timeout: float = 10.0, what: str = "") -> Any:
    return wait_for(cond, timeout=timeout, interval=0.005, what=what)


def test_exactly_one_of_two_leads(make: Electors, client: KubeClient, namespace: str) -> None:
    tl = Timeline()
    a, b = make("a", tl), make("b", tl)
    until(lambda: len(tl.leaders()) == 1, what="a leader")
    deadline = time.monotonic() + DURATION  # through several renewals
    while time.monotonic() < deadline:
        assert len(tl.leaders()) == 1
        assert [a.is_leader(), b.is_leader()].count(True) <= 1
        time.sleep(0.01)
    (leader,) = tl.leaders()
    lease = client.get(r.LEASES, a.config.lease_name, namespace=namespace)
    assert lease["spec"]["holderIdentity"] == leader
    assert lease["spec"]["leaseDurationSeconds"] == 2
    assert a.leader == b.leader == leader


def test_clean_stop_releases_and_the_standby_takes_over_at_once(make: Electors) -> None:
    tl = Timeline()
    first = make("first", tl)
    assert tl.leads("first", 10)
    second = make("second", tl)
    until(lambda: second.leader == "first", what="standby sees the leader")
    t0 = time.monotonic()
    first.stop()
    assert tl.leads("second", 10)
    took = time.monotonic() - t0
    FIGURES["leader release -> standby leading (s)"] = f"{took:.3f}"
    assert took < RETRY, "a released Lease is taken without waiting for expiry"
    assert tl.spans["first"][0][1] < tl.spans["second"][0][0], "stop callback before takeover"
    tl.assert_no_overlap()


def test_a_leader_that_cannot_renew_steps_down_before_anyone_takes_over(
    make: Electors, client: KubeClient
) -> None:
    tl = Timeline()
    cuttable = Cuttable(client)
    old = make("old", tl, cuttable)
    assert tl.leads("old", 10)
    new = make("new", tl)
    until(lambda: new.leader == "old")
    cut_at = time.monotonic()
    cuttable.cut.set()
    until(lambda: tl.spans["old"][0][1] < float("inf"), what="old leader's stop callback")
    stepped_down = tl.spans["old"][0][1] - cut_at
    assert not old.is_leader()
    assert stepped_down <= RENEW + 0.1, "at the renew deadline at the latest"
    assert tl.leads("new", DURATION + 2)
    took_over = tl.spans["new"][0][0] - cut_at
    FIGURES["partitioned leader: cut -> stop callback / standby leading (s)"] = (
        f"{stepped_down:.3f} / {took_over:.3f} (renew deadline {RENEW}, lease {DURATION})"
    )
    assert took_over <= DURATION + 0.25
    tl.assert_no_overlap()


def spawn_leader(control_plane: ControlPlane, make: Electors) -> subprocess.Popen[str]:
    """A candidate in another process; returns once it leads."""
    argv = [sys.executable, str(Path(__file__).with_name("leader_proc.py"))]
    argv += [str(control_plane.kubeconfig), make.namespace, make.lease, "doomed"]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "LEADING"
    return proc


def test_sigkilled_leader_is_replaced_within_the_lease_duration(
    control_plane: ControlPlane, make: Electors
) -> None:
    proc = spawn_leader(control_plane, make)
    try:
        tl = Timeline()
        survivor = make("survivor", tl)
        until(lambda: survivor.leader == "doomed", what="survivor sees the leader")
        killed_at = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        assert tl.leads("survivor", DURATION + 2)
        took = tl.spans["survivor"][0][0] - killed_at
        FIGURES["SIGKILLed leader -> standby leading (s)"] = f"{took:.3f} (lease {DURATION})"
        assert took <= DURATION + RETRY, "expiry + one write, measured from the kill"
    finally:
        proc.kill()
        proc.wait(10)


def test_config_from_settings_and_timing_rules() -> None:
    s = LeaderElection(namespace="", leaseName="agp")
    cfg = LeaderElectionConfig.from_settings(s, namespace="kube-system")
    assert (cfg.lease_name, cfg.namespace) == ("agp", "kube-system")
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    assert "_" in cfg.identity
    with pytest.raises(ValueError, match="retry_period"):
        LeaderElectionConfig(
            lease_name="x", namespace="y", identity="z", lease_duration=5, renew_deadline=5
        )

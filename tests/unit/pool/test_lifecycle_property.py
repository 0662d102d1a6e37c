"""Hypothesis state machine: the pool lifecycle against a fake cloud with random
faults, lost responses and crashes. The pool's status is the only memory that
survives a crash, exactly as in the real controller.

Invariants after every step:
- never more than N live instances, and never two generations live at once;
- Satisfied means exactly N live instances, each with a Ready node of the group;
- everything launched is either recorded in status or adoptable by its token;
- once unclaimed and past keep-warm, reconciling leaves nothing live.
Launches may land in a Capacity Block that ends soon (its drain and release run too),
and an acquire may answer that the listed block has not started.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from atomic_gang import keys
from atomic_gang_provisioner.api import Claim
from atomic_gang_provisioner.cloud.reservation_fit import Reservation
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    AwaitingReservation,
    Launched,
    RetryLater,
)
from atomic_gang_provisioner.pool import machine
from atomic_gang_provisioner.pool.driver import drive
from atomic_gang_provisioner.pool.model import NodeView, Observed
from atomic_gang_provisioner.pool.story import (
    Ask,
    DeleteGroup,
    Describe,
    FindByTag,
    Launch,
    ReadTopology,
    ReadTopologyAhead,
    Terminate,
)
from tests.support.fakecloud import FakeCloud
from tests.support.pools import KNOBS, T0, pool

# Coverage's tracer (CPython 3.11 has no sys.monitoring) makes a Hypothesis run about
# three times slower, and the example tests cover the same lines (all but ~11 of 5,300).
pytestmark = pytest.mark.no_cover

N = 4
TYPE = "p4d.24xlarge"


class LostResponseError(Exception):
    """The launch happened at EC2 but the answer never arrived."""


class PoolLifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.block_minutes = 45  # launches land in a Capacity Block ending this soon (0: none)
        self.cloud = FakeCloud(
            now=lambda: self.now,
            capacity={TYPE: 8},
            layers=("nn-1", "nn-2"),
            reservation_for=lambda _: self._block(),
        )
        self.pool = pool(claim=None)
        self.joined: set[str] = set()
        self.claims = 0

    def _live(self) -> dict[str, int]:
        """Each live instance and the generation it was launched for."""
        return {i.instance_id: i.generation or 0 for i in self.cloud.live()}

    def _groups(self) -> dict[str, str]:
        """Each live instance and the group it registers with (a repair's replacements
        join the gang's group)."""
        return {i.instance_id: i.tag(keys.GROUP) or "" for i in self.cloud.live()}

    def _block(self) -> Reservation | None:
        if not self.block_minutes:
            return None
        return Reservation(
            reservation_id="cr-00000001",
            instance_type=TYPE,
            zone="us-east-1a",
            state="active",
            total=N,
            available=0,
            capacity_block=True,
            end=self.now + timedelta(minutes=self.block_minutes),
        )

    def _lost(self, request: AcquireRequest) -> AcquireResult:
        """The launch happens at EC2 but its answer never arrives."""
        result = self.cloud.launch(request)
        if isinstance(result, Launched):
            raise LostResponseError
        return result

    def _nodes(self) -> tuple[NodeView, ...]:
        s = self.pool.status
        live = self._groups()
        return tuple(
            NodeView(
                name=iid,
                instance_id=iid,
                ready=True,
                pool=self.pool.name,
                group=live[iid],
            )
            for iid in s.instanceIds
            if iid in self.joined and iid in live
        )

    def _answer(self, question: Ask[Any]) -> object:
        """EC2's answer to the story's ask: every read answers at once, every call is
        made in the fake cloud."""
        match question:
            case Describe(instance_ids=ids):
                return self.cloud.describe_later(ids).result()
            case ReadTopology(instance_ids=ids):
                return self.cloud.read_topology_later(ids).result()
            case ReadTopologyAhead():
                return None  # nothing cached yet: the read at N Ready asks EC2
            case FindByTag(generation=generation):
                return self.cloud.find(pool=self.pool.name, generation=generation)
            case Launch(request=request):
                return self.cloud.acquire(request)
            case Terminate(request=request):
                return self.cloud.release(request)
            case DeleteGroup():
                return self.cloud.delete_placement_group(self.pool.name)
        raise AssertionError(f"unexpected ask {question!r}")

    @rule(crash=st.booleans())
    def reconcile(self, crash: bool) -> None:
        obs = Observed(nodes=self._nodes(), knobs=KNOBS)
        story = machine.story(self.pool, obs, self.now)
        try:
            decision = drive(self.pool, story, self._answer, now=self.now, knobs=KNOBS)
        except LostResponseError:
            return  # nothing persisted: the next reconcile must adopt
        assert not decision.parked  # every ask is answered here
        if crash:
            return  # the process died before the status write
        self.pool = self.pool.model_copy(update={"status": decision.status})

    @rule()
    def claim(self) -> None:
        self.claims += 1
        c = Claim(
            namespace="ns", name=f"wl-{self.claims}", uid=f"u{self.claims}", claimedAt=self.now
        )
        self._set_claim(c)

    @rule()
    def unclaim(self) -> None:
        self._set_claim(None)

    def _set_claim(self, c: Claim | None) -> None:
        spec = self.pool.spec.model_copy(update={"claim": c})
        meta = {**self.pool.metadata, "generation": self.pool.generation + 1}
        self.pool = self.pool.model_copy(update={"spec": spec, "metadata": meta})

    @rule(seconds=st.sampled_from([1, 30, 120, 700, 1000]))
    def tick(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule()
    def join_all(self) -> None:
        self.joined.update(self._live())

    @rule()
    def settle(self) -> None:
        """Every launched node joins and the pool reconciles a few times without a crash:
        the walk reaches Satisfied (and, in a block, its drain) often enough."""
        for _ in range(4):
            self.join_all()
            self.reconcile(crash=False)

    @rule(k=st.integers(min_value=0, max_value=N - 1))
    def join_some(self, k: int) -> None:
        self.joined.update(sorted(self._live())[:k])

    @rule(minutes=st.sampled_from([0, 45, 80]))
    def block(self, minutes: int) -> None:
        """The next launches go into a block ending that long after them (0: on-demand)."""
        self.block_minutes = minutes

    @rule(fault=st.sampled_from(["throttle", "lost", "await", ""]))
    def inject(self, fault: str) -> None:
        """The next launch meets this fault (none: a fault injected earlier is dropped)."""
        self.cloud.clear("acquire")
        if fault == "throttle":
            self.cloud.next("acquire", RetryLater(code="RequestLimitExceeded", message="slow down"))
        elif fault == "await":
            self.cloud.next(
                "acquire", AwaitingReservation(message="Capacity Block cr-1 is not active yet")
            )
        elif fault == "lost":
            self.cloud.next_hook("acquire", self._lost)

    @rule(capacity=st.sampled_from([0, 3, 4, 8]))
    def set_capacity(self, capacity: int) -> None:
        self.cloud.capacity[TYPE] = capacity

    @precondition(lambda self: bool(self.cloud.live()))
    @rule()
    def kill_one(self) -> None:
        self.cloud.terminate(sorted(self._live())[0])

    @invariant()
    def at_most_one_gang_live(self) -> None:
        """Never more than N live, all of one gang: one group (a repair's replacements
        join it; a fresh gang comes only after the last one is gone)."""
        live = self._groups()
        assert len(live) <= N
        assert len(set(live.values())) <= 1

    @invariant()
    def satisfied_means_n_ready(self) -> None:
        s = self.pool.status
        if s.phase == "Satisfied":
            assert len(s.instanceIds) == N
            assert s.readyCount == N
            assert s.spread == 1  # the set's own topology was read before it was Ready
            assert sorted(s.networkNodes or {}) == sorted(s.instanceIds)

    @invariant()
    def nothing_untracked(self) -> None:
        s = self.pool.status
        recorded = set(s.instanceIds)
        for iid, gen in self._live().items():
            # Untracked only in the crash window, and then adoptable by the current token.
            assert iid in recorded or gen == s.acquireGeneration

    def teardown(self) -> None:
        """Unclaimed and past keep-warm: a few reconciles leave nothing live."""
        self._set_claim(None)
        self.cloud.clear("acquire")
        self.joined.update(self._live())
        for _ in range(8):
            self.now += timedelta(hours=1)
            self.reconcile(crash=False)
        assert self._live() == {}, (self.pool.status.phase, self._live())


PoolLifecycle.TestCase.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
TestPoolLifecycle = PoolLifecycle.TestCase

"""Random acquisitions, capacity changes, faults, lost answers and crashes.

Invariants, after every step: never more than N live instances for one
(pool, generation); every instance is tagged managed; every instance carries
*our* ClientToken for its (pool, generation, AZ or fleet), not one botocore
made up. At the end: pools still acquiring (a crash, a RetryLater) resume as
a restarted controller would, everything is released, and no instance of any
pool may be live *before* the reaper sweep; the sweep, given the real pool
views, then leaves no managed instance.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from moto import mock_aws

from atomic_gang import GangSpec, GoDuration, Mode, keys
from atomic_gang_fakeaws import installed
from atomic_gang_fakeaws.world import seed_backends
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    ReleaseRequest,
    find_leaks,
    naming,
)
from atomic_gang_provisioner.cloud.aws import AwsClients, Ec2Provider, EngineConfig, make_clients
from atomic_gang_provisioner.cloud.leaks import PoolView
from atomic_gang_provisioner.cloud.retry import Backoff
from tests.integration.cloud.conftest import CLUSTER, REGION, TYPE, backend, tags_of
from tests.support.clock import ManualClock

# Coverage's tracer (CPython 3.11 has no sys.monitoring) makes a Hypothesis run about
# three times slower, and the example tests cover the same lines (all but ~11 of 5,300).
pytestmark = pytest.mark.no_cover

ZONES = (REGION + "a", REGION + "b", REGION + "c")
FAULT_ACTIONS = (
    "RunInstances",
    "CreateFleet",
    "DescribeInstances",
    "TerminateInstances",
    "DeleteFleets",
    "DescribeNetworkInterfaces",
)
FAULTS: dict[str, dict[str, Any]] = {
    "5xx": {"effect": "error", "code": "InternalError", "status": 500},
    "throttled": {"effect": "error", "code": "RequestLimitExceeded", "status": 503},
    "lost": {"effect": "lost_response"},
    "timeout": {"effect": "timeout"},
    "malformed": {"effect": "malformed_fleet"},
}


@functools.cache
def shared() -> AwsClients:
    """Clients built once per run (moto intercepts them under every example's mock)."""
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        botocore_session=botocore.session.get_session(),
        region_name=REGION,
    )
    return make_clients(region=REGION, session=session)


@dataclass
class Pool:
    count: int
    mode: Mode
    generation: int = 0
    ids: tuple[str, ...] = ()
    fleets: tuple[str, ...] = ()
    enis: tuple[str, ...] = field(default_factory=tuple)
    # The persisted status still says Acquiring at this generation (a crash, or a
    # non-terminal result): a restarted controller re-acquires and adopts.
    acquiring: bool = False
    released: set[str] = field(default_factory=set)


class GangMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.mock = mock_aws()
        self.mock.start()
        self.clock = ManualClock()
        self.layer_cm = installed(clock=self.clock.monotonic)
        self.fake = self.layer_cm.__enter__()
        self.world = seed_backends(region=REGION, cluster=CLUSTER)
        self.engine = self.new_engine()
        self.pools = {
            "runs": Pool(count=2, mode="runinstances"),
            "fleet": Pool(count=3, mode="fleet"),
        }

    def new_engine(self) -> Ec2Provider:
        config = EngineConfig(
            cluster=CLUSTER,
            backoff=Backoff(max_attempts=4, base_seconds=0.5, cap_seconds=4, rng=random.Random(0)),
            eni_wait_seconds=10,
        )
        return Ec2Provider(
            clients=shared(),
            config=config,
            sleeper=self.clock.sleep,
            wall=self.clock.now,
            monotonic=self.clock.monotonic,
        )

    def request(self, name: str) -> AcquireRequest:
        pool = self.pools[name]
        spec = GangSpec(
            pool=name,
            count=pool.count,
            instance_type=TYPE,
            mode=pool.mode,
            region=REGION,
            node_role_arn=self.world.node_role_arn,
            keep_warm_ttl=GoDuration.of(minutes=10),
            max_lifetime=GoDuration.of(hours=4),
            ami_variant="nvidia",
        )
        return AcquireRequest(spec=spec, generation=pool.generation)

    @rule(name=st.sampled_from(["runs", "fleet"]))
    def acquire(self, name: str) -> None:
        pool = self.pools[name]
        if pool.ids:
            return
        result = self.engine.acquire(self.request(name))
        pool.acquiring = not result.terminal
        if isinstance(result, Launched):
            ids = set(result.instance_ids)
            assert len(ids) == pool.count, result
            assert ids <= {i.id for i in self.live()}, f"Launched reports dead ids: {result}"
            pool.ids = result.instance_ids
            pool.fleets = (result.fleet_id,) if result.fleet_id else ()
        if result.terminal:
            pool.generation += 1

    @rule(name=st.sampled_from(["runs", "fleet"]))
    def acquire_then_crash(self, name: str) -> None:
        """EC2 answered, the controller died before persisting anything."""
        if not self.pools[name].ids:
            self.pools[name].acquiring = True
            self.engine.acquire(self.request(name))
        self.engine = self.new_engine()

    @rule(name=st.sampled_from(["runs", "fleet"]), times=st.integers(min_value=1, max_value=5))
    def lost_launch_then_acquire_again(self, name: str, times: int) -> None:
        """The launch call's answer is lost ``times`` times (4 exhaust the retry budget)."""
        action = "CreateFleet" if self.pools[name].mode == "fleet" else "RunInstances"
        self.fake.add_rule({"action": action, "effect": "lost_response", "times": times})
        self.acquire(name)
        self.acquire(name)

    @rule(zone=st.sampled_from(ZONES), slots=st.none() | st.integers(min_value=0, max_value=4))
    def set_capacity(self, zone: str, slots: int | None) -> None:
        self.fake.set_capacity(zone, TYPE, slots)

    @rule(
        kind=st.sampled_from(sorted(FAULTS)),
        action=st.sampled_from(FAULT_ACTIONS),
        times=st.integers(min_value=1, max_value=5),
    )
    def inject_fault(self, kind: str, action: str, times: int) -> None:
        if kind == "malformed":
            action = "CreateFleet"
        self.fake.add_rule({"action": action, "times": times, **FAULTS[kind]})

    @rule(name=st.sampled_from(["runs", "fleet"]))
    def release(self, name: str) -> None:
        pool = self.pools[name]
        if not pool.ids:
            return
        done = self.engine.release(
            ReleaseRequest(instance_ids=pool.ids, fleet_ids=pool.fleets, enis=pool.enis)
        )
        pool.enis = done.pending_enis
        if done.done:
            pool.released.update(pool.ids)
            pool.ids, pool.fleets = (), ()

    @rule(seconds=st.sampled_from([1.0, 30.0, 600.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.sleep(seconds)

    def live(self) -> list[Any]:
        return [
            i for i in backend().all_instances() if i.state not in ("terminated", "shutting-down")
        ]

    @invariant()
    def at_most_n_per_pool_generation(self) -> None:
        seen: dict[tuple[str, str], int] = {}
        for inst in self.live():
            tags = tags_of(inst.id)
            key = (tags.get(keys.POOL, "?"), tags.get(keys.GENERATION, "?"))
            seen[key] = seen.get(key, 0) + 1
        for (pool, gen), n in seen.items():
            assert n <= self.pools[pool].count, f"{n} live instances for {pool} generation {gen}"

    @invariant()
    def everything_is_managed_and_carries_our_token(self) -> None:
        for inst in backend().all_instances():
            tags = tags_of(inst.id)
            assert tags.get(keys.MANAGED) == "true", inst.id
            pool = tags[keys.POOL]
            zone = "fleet" if self.pools[pool].mode == "fleet" else inst.placement.zone
            want = naming.client_token(pool=pool, generation=int(tags[keys.GENERATION]), zone=zone)
            assert inst.client_token == want, (inst.id, inst.client_token, want)

    @invariant()
    def released_sets_stay_released(self) -> None:
        for name, pool in self.pools.items():
            back = pool.released & {i.id for i in self.live()}
            assert not back, f"released instances of {name} are live: {sorted(back)}"

    def finish(self) -> None:
        """What a restarted controller does: resume acquiring pools, then release all."""
        self.fake.clear_rules()
        self.engine = self.new_engine()
        for name, pool in self.pools.items():
            for _ in range(5):
                if not pool.acquiring or pool.ids:
                    break
                self.acquire(name)
            for _ in range(5):
                if not pool.ids:
                    break
                self.release(name)
            assert not pool.ids, f"{name} could not be released"

    def teardown(self) -> None:
        try:
            self.finish()
            left = [(i.id, tags_of(i.id).get(keys.POOL)) for i in self.live()]
            assert left == [], f"live after every pool was released: {left}"
            views = {
                name: PoolView(
                    instance_ids=frozenset(p.ids),
                    adopting=p.generation if p.acquiring else None,
                )
                for name, p in self.pools.items()
            }
            owned = self.engine.list_owned()
            reap = find_leaks(
                owned,
                now=self.clock.now(),
                pools=views,
                default_max_lifetime=GoDuration.of(hours=4),
            )
            self.engine.release(ReleaseRequest(instance_ids=tuple(r.instance_id for r in reap)))
            assert [i.id for i in self.live()] == []
        finally:
            self.layer_cm.__exit__(None, None, None)
            self.mock.stop()


GangMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestGangMachine = GangMachine.TestCase

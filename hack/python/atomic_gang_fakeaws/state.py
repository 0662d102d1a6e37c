"""The layer's mutable world: capacity, reservations, rules, the call log,
idempotency records, throttling buckets and the layer's two clocks.

``clock`` is monotonic (throttling buckets); ``wall`` is the UTC time that moves
reservations through their states. Tests step both; a server uses real time.

One :class:`FakeState` is *active* at a time (module global, guarded by a
lock); the moto patches consult it and behave like plain moto when none is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from atomic_gang_fakeaws.network import NetworkKnobs
from atomic_gang_fakeaws.reservations import BlockTermination, CapacityReservation
from atomic_gang_fakeaws.rules import Rule
from atomic_gang_fakeaws.throttle import Throttler


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Call:
    seq: int
    service: str
    action: str
    params: dict[str, str]
    outcome: str = "pending"
    status: int = 0
    region: str = ""
    at: float = field(default_factory=time.time)  # wall clock, for latency benchmarks
    caller: str = ""  # the access key id: tells the controller's calls from a simulator's
    seconds: float = 0.0  # time moto (and the layer) spent on the call, serialisation included
    message: str = ""  # an error's message, as the client reads it

    def as_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": self.at,
            "service": self.service,
            "action": self.action,
            "region": self.region,
            "params": self.params,
            "outcome": self.outcome,
            "status": self.status,
            "caller": self.caller,
            "seconds": round(self.seconds, 6),
            "message": self.message,
        }


@dataclass
class Idem:
    fingerprint: str
    result: Any


@dataclass
class FakeState:
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], datetime] = utcnow
    server_mode: bool = False
    default_capacity: int | None = None
    capacity: dict[tuple[str, str], int] = field(default_factory=dict)
    reservations: dict[str, CapacityReservation] = field(default_factory=dict)
    reservation_use: dict[str, str] = field(default_factory=dict)
    # What the layer itself did when a Capacity Block reached EndDate - 30 min.
    block_terminations: list[BlockTermination] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    idempotency: dict[tuple[str, ...], Idem] = field(default_factory=dict)
    eni_detach_polls: int = 0
    # Access keys outside the account's API budget: a simulator's reads stand in for
    # IMDS and kubelet, which EC2 does not throttle against the controller.
    unthrottled: set[str] = field(default_factory=set)
    pending_detach: dict[str, tuple[Any, Any, int]] = field(default_factory=dict)
    network: NetworkKnobs = field(default_factory=NetworkKnobs)
    lock: threading.RLock = field(default_factory=threading.RLock)
    throttler: Throttler = field(init=False)

    def __post_init__(self) -> None:
        self.throttler = Throttler(self.clock)

    def set_capacity(self, zone: str, instance_type: str, count: int | None) -> None:
        with self.lock:
            if count is None:
                self.capacity.pop((zone, instance_type), None)
            else:
                self.capacity[(zone, instance_type)] = count

    def limit(self, zone: str, instance_type: str) -> int | None:
        return self.capacity.get((zone, instance_type), self.default_capacity)

    def add_rule(self, rule: Rule) -> Rule:
        with self.lock:
            self.rules.append(rule)
        return rule

    def take_rule(self, *, service: str, action: str, params: dict[str, str]) -> Rule | None:
        """The first live rule matching this call, counted as fired."""
        with self.lock:
            for rule in self.rules:
                if rule.exhausted or not rule.matches(
                    service=service, action=action, params=params
                ):
                    continue
                if rule.skip:
                    rule.skip -= 1
                    return None
                rule.fired += 1
                return rule
        return None

    def log(
        self, *, service: str, action: str, params: dict[str, str], region: str, caller: str = ""
    ) -> Call:
        with self.lock:
            call = Call(len(self.calls) + 1, service, action, params, region=region, caller=caller)
            self.calls.append(call)
        return call


_slot: list[FakeState | None] = [None]
_guard = threading.Lock()


def active() -> FakeState | None:
    return _slot[0]


def activate(state: FakeState | None) -> None:
    with _guard:
        _slot[0] = state


@contextmanager
def activated(state: FakeState) -> Iterator[FakeState]:
    previous = _slot[0]
    activate(state)
    try:
        yield state
    finally:
        activate(previous)

"""Builders for the capacity-block phase tests: a block, a pool acquiring, a pool whose
set runs in a block, and the decision after an acquire result."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api import conditions as c
from atomic_gang_provisioner.cloud.reservation_fit import Reservation
from atomic_gang_provisioner.pool.driver import Decision
from tests.support.pools import KEY, KNOBS, T0, decide, launch_asked, launched, observed, pool

START = T0 + timedelta(seconds=60)
END = T0 + timedelta(hours=3)
DRAIN = END - KNOBS.block_drain_lead  # T0 + 2h20m
WARN = DRAIN - KNOBS.block_warning_lead  # T0 + 2h10m
RELEASE_BY = END - timedelta(minutes=31)  # a minute before EC2's own termination


def cblock(**fields: Any) -> Reservation:
    base: dict[str, Any] = {
        "reservation_id": "cr-0123456789abcdef0",
        "instance_type": "p4d.24xlarge",
        "zone": "us-east-1a",
        "state": "active",
        "total": 4,
        "available": 0,
        "capacity_block": True,
        "start": T0,
        "end": END,
        **fields,
    }
    return Reservation(**base)


def acquiring(**status: Any) -> GangNodePool:
    base: dict[str, Any] = {"phase": "Acquiring", "claimKey": KEY, "acquireGeneration": 7}
    return pool(**{**base, **status})


def after(p: GangNodePool, result: Any, *, now: Any = T0) -> Decision:
    """The decision once the launch ``p`` asks for is answered with ``result``."""
    assert launch_asked(decide(p, observed(), now)) is not None
    return decide(p, replace(observed(), launch=result), now)


def condition(decision: Decision, type_: c.ConditionType) -> Any:
    return c.condition(decision.status, type_)


def in_block(**status: Any) -> GangNodePool:
    base: dict[str, Any] = {
        "phase": "Satisfied",
        "readyCount": 4,
        "reservationId": "cr-0123456789abcdef0",
        "reservationEnd": END,
        "capacityBlock": True,
    }
    return launched(**{**base, **status})

"""What a phase's story starts from (the knobs, what the caches show) and the small rules
the phases share: status updates, backoff, the live set's health."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Unpack

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus, StatusChange
from atomic_gang_provisioner.backoff import exponential
from atomic_gang_provisioner.cloud.values import Instance


@dataclass(frozen=True, slots=True)
class ConditionRule:
    """A Node condition that breaks a gang node: ``type`` with ``status`` for ``grace``
    (nodeHealth.conditions)."""

    type: str
    status: str
    grace: timedelta


@dataclass(frozen=True, slots=True, kw_only=True)
class Knobs:
    """The settings the phases read (from GangSettings, resolved once by
    ``atomic_gang_provisioner.settings``)."""

    cluster: str
    join_deadline: timedelta = timedelta(seconds=600)
    attempts_before_retry: int = 20
    backoff_base: float = 5.0
    backoff_max: float = 300.0
    health_grace: timedelta = timedelta(seconds=60)
    release_poll: float = 5.0
    # How long after a launch of unknown outcome a lookup by tag that finds nothing is
    # believed: EC2's describe filtered by tag lags new instances (eventual consistency).
    lost_launch_settle: timedelta = timedelta(seconds=120)
    # ec2Api.describeReuseSeconds: how old a sign of an instance's life a join check takes
    # (an answer of EC2's, or its Node turning Ready); 0 asks EC2 for every gang.
    liveness_window: timedelta = timedelta(seconds=10)
    # capacityBlock.*: the drain point's lead on EndDate, the time a gang needs before
    # it (without min-runtime), and the CapacityBlockEnding warning's lead on it.
    block_drain_lead: timedelta = timedelta(minutes=40)
    block_min_remaining: timedelta = timedelta(minutes=30)
    block_warning_lead: timedelta = timedelta(minutes=10)
    # nodeHealth.conditions: beyond Ready, what breaks a node of a formed gang.
    health_conditions: tuple[ConditionRule, ...] = ()
    # repair.*: a claimed gang's broken nodes replaced in place (docs/design.md, "Repair").
    repair_enabled: bool = True
    repair_deadline: timedelta = timedelta(seconds=900)
    repair_max_nodes: int = 4
    max_repairs: int = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeCondition:
    """One condition of a Node other than Ready (the node monitoring agent's, say)."""

    type: str
    status: str
    reason: str = ""
    since: datetime | None = None  # lastTransitionTime


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """One Node whose providerID names an instance of the pool."""

    name: str
    instance_id: str
    ready: bool  # Ready, not being deleted, and no taint that keeps pods off (nodes.py)
    ready_since: datetime | None = None  # Ready condition's lastTransitionTime
    pool: str | None = None
    group: str | None = None
    topology_labels: tuple[tuple[str, str], ...] = ()  # its network-node-layer labels
    devices: tuple[tuple[str, int], ...] = ()  # extended resources in its allocatable
    conditions: tuple[NodeCondition, ...] = ()  # every condition but Ready
    broken_taint: bool = False  # carries keys.BROKEN_TAINT already

    def holds(self, wanted: Mapping[str, int]) -> bool:
        """Its allocatable has at least ``wanted`` of each extended resource (a device
        plugin adds them some time after the Node turned Ready)."""
        have = dict(self.devices)
        return all(have.get(name, 0) >= amount for name, amount in wanted.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """What the caches show when the reconcile starts (EC2 is asked for, by the story)."""

    nodes: tuple[NodeView, ...] = ()
    reported_unhealthy: tuple[str, ...] = ()  # of the set, EC2's last answer says not healthy
    progress_written_at: datetime | None = None  # this process's last n/N write while joining
    knobs: Knobs

    def node_for(self, instance_id: str) -> NodeView | None:
        for node in self.nodes:
            if node.instance_id == instance_id:
                return node
        return None


def update(status: GangNodePoolStatus, **changes: Unpack[StatusChange]) -> GangNodePoolStatus:
    """``status`` with ``changes``: mypy checks each keyword, and an unknown one raises
    (``model_copy(update=)`` alone would drop a misspelt field silently)."""
    unknown = changes.keys() - GangNodePoolStatus.model_fields.keys()
    if unknown:
        raise TypeError(f"GangNodePoolStatus has no field {', '.join(sorted(unknown))}")
    return status.model_copy(update=changes)


def with_status(pool: GangNodePool, status: GangNodePoolStatus) -> GangNodePool:
    return pool.model_copy(update={"status": status})


def has_resources(status: GangNodePoolStatus) -> bool:
    """Anything recorded that bills or must be cleaned up: instances, fleets, ENIs."""
    return bool(status.instanceIds or status.fleetIds or status.pendingEnis)


def backoff_seconds(*, pool: str, attempt: int, base: float, cap: float) -> float:
    """Equal jitter (half the ceiling left to chance) for attempt 1, 2, ..., deterministic
    in (pool, attempt) so that decide stays pure."""
    digest = hashlib.sha256(f"{pool}/{attempt}".encode()).digest()
    delay = exponential(attempt - 1, base=base, cap=cap, spread=0.5, draw=digest[0] / 255)
    return round(delay, 3)


def seconds_until(when: datetime | None, now: datetime) -> float | None:
    if when is None:
        return None
    return max(0.0, (when - now).total_seconds())


def claim_key(pool: GangNodePool) -> str:
    claim = pool.spec.claim
    return claim.key if claim is not None else ""


@dataclass(frozen=True, slots=True)
class Health:
    """How the pool's live set looks right now."""

    ready: int
    missing: tuple[str, ...] = field(default=())
    not_ready: tuple[str, ...] = field(default=())
    wrong_group: tuple[str, ...] = field(default=())
    without_devices: tuple[str, ...] = field(default=())  # Ready, devices not advertised


def health(
    pool: GangNodePool, observed: Observed, *, devices: Mapping[str, int] | None = None
) -> Health:
    """Where the live set stands; with ``devices``, a Node is Ready only once it holds
    them (the join's rule: one pod of the claimant can land on it)."""
    ready = 0
    missing: list[str] = []
    not_ready: list[str] = []
    wrong: list[str] = []
    bare: list[str] = []
    for iid in pool.status.instanceIds:
        node = observed.node_for(iid)
        if node is None:
            missing.append(iid)
        elif node.group != pool.status.activeGroup or node.pool != pool.name:
            wrong.append(iid)
        elif not node.ready:
            not_ready.append(iid)
        elif not node.holds(devices or {}):
            bare.append(iid)
        else:
            ready += 1
    return Health(ready, tuple(missing), tuple(not_ready), tuple(wrong), tuple(bare))


def devices_note(pool: GangNodePool, count: int) -> str:
    """What a joining gang's messages add for ``count`` Nodes Ready without the devices
    its claimant's pods ask for; "" when there are none."""
    claim = pool.spec.claim
    if not count or claim is None or not claim.resources:
        return ""
    wanted = ", ".join(f"{name}: {amount}" for name, amount in claim.resources.items())
    return (
        f"; {count} more Ready without {wanted} in allocatable "
        "(their device plugin has not registered)"
    )


def dead_instances(pool: GangNodePool, described: tuple[Instance, ...]) -> tuple[str, ...]:
    """Instance ids of the set that EC2 no longer reports healthy (in its answer to a
    describe): gone, terminated, stopping or stopped."""
    healthy = {i.instance_id for i in described if i.healthy}
    return tuple(i for i in pool.status.instanceIds if i not in healthy)


def lookups_lag_until(status: GangNodePoolStatus, knobs: Knobs) -> datetime | None:
    """Until when a lookup by tag that finds nothing may still miss the recorded launch
    of unknown outcome of this generation (None: there is none, or an older release
    recorded it without a time)."""
    pending = status.pendingLaunch
    if pending is None or pending.generation != status.acquireGeneration:
        return None
    if pending.recordedAt is None:
        return None
    return pending.recordedAt + knobs.lost_launch_settle

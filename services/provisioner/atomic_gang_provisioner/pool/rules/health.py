"""Shared health rule for a formed gang (Satisfied, Repairing or KeepWarm).

A node of the gang is broken when its instance is gone, terminated, stopping or stopped;
when its Node is NotReady (or missing, or in another group) past ``health_grace``; or
when one of ``nodeHealth.conditions`` (the EKS node monitoring agent's
``AcceleratedHardwareReady=False``, say: a GPU that fails leaves the kubelet Ready) has
held past its own grace. A missing Node, or a Node newly seen NotReady, triggers one
describe: an instance EC2 no longer runs is broken at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from atomic_gang_provisioner.api import BrokenNode, GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.pool.model import Observed, dead_instances, health, update
from atomic_gang_provisioner.pool.story import Describe, Part, ask


@dataclass(frozen=True, slots=True)
class Verdict:
    status: GangNodePoolStatus
    broken: tuple[BrokenNode, ...] = ()  # first cause per instance: lost, NotReady, condition
    wait: float | None = None  # seconds until the soonest grace still running ends

    @property
    def reason(self) -> FailureReason:
        """The gang's reason, from its first broken node's."""
        if not self.broken:
            return FailureReason.NONE
        return FailureReason(self.broken[0].reason)

    @property
    def message(self) -> str:
        return "; ".join(describe(b) for b in self.broken)


def describe(node: BrokenNode) -> str:
    """``i-0abc (node-1): AcceleratedHardwareReady=False (NvidiaXID79Error) since 12:03:04Z``."""
    named = f"{node.instanceId} ({node.node})" if node.node else node.instanceId
    since = f" since {node.since.strftime('%H:%M:%SZ')}" if node.since else ""
    return f"{named}: {node.detail}{since}"


def check(pool: GangNodePool, observed: Observed, now: datetime) -> Part[Verdict]:
    status = pool.status
    h = health(pool, observed)
    status = update(status, readyCount=h.ready)
    unwell, wait = _conditions(pool, observed, now)
    if h.ready == len(status.instanceIds):
        return Verdict(update(status, unhealthySince=None), broken=unwell, wait=wait)
    lost: list[BrokenNode] = []
    newly_not_ready = h.not_ready and status.unhealthySince is None
    if h.missing or newly_not_ready:
        described = yield from ask(Describe(tuple(status.instanceIds)))
        lost = [
            _broken(
                observed,
                iid,
                FailureReason.INSTANCE_LOST,
                "instance gone, terminated or stopped",
                now,
            )
            for iid in dead_instances(pool, described)
        ]
    since = status.unhealthySince or now
    grace = observed.knobs.health_grace
    bad = (*h.missing, *h.not_ready, *h.wrong_group)
    if now - since >= grace:
        detail = f"Node not Ready for {grace.total_seconds():.0f}s"
        late = [_broken(observed, iid, FailureReason.NODE_NOT_READY, detail, since) for iid in bad]
        return Verdict(status, broken=_first_per_instance(lost, late, unwell), wait=wait)
    remaining = (since + grace - now).total_seconds()
    wait = remaining if wait is None else min(wait, remaining)
    status = update(status, unhealthySince=since)
    return Verdict(status, broken=_first_per_instance(lost, unwell), wait=wait)


def _conditions(
    pool: GangNodePool, observed: Observed, now: datetime
) -> tuple[tuple[BrokenNode, ...], float | None]:
    """Nodes whose listed condition has held past its grace, and the seconds until the
    soonest grace still running ends."""
    rules = observed.knobs.health_conditions
    if not rules:
        return (), None
    out: list[BrokenNode] = []
    wait: float | None = None
    for iid in pool.status.instanceIds:
        node = observed.node_for(iid)
        if node is None:
            continue
        for cond in node.conditions:
            rule = next((r for r in rules if (r.type, r.status) == (cond.type, cond.status)), None)
            if rule is None:
                continue
            since = cond.since or now
            left = (since + rule.grace - now).total_seconds()
            if left > 0:
                wait = left if wait is None else min(wait, left)
                continue
            why = f" ({cond.reason})" if cond.reason else ""
            detail = f"{cond.type}={cond.status}{why}"
            out.append(
                BrokenNode(
                    instanceId=iid,
                    node=node.name,
                    reason=FailureReason.NODE_UNHEALTHY,
                    detail=detail,
                    since=since,
                )
            )
            break
    return tuple(out), wait


def _broken(
    observed: Observed, iid: str, reason: FailureReason, detail: str, since: datetime
) -> BrokenNode:
    node = observed.node_for(iid)
    return BrokenNode(
        instanceId=iid,
        node=node.name if node is not None else "",
        reason=reason,
        detail=detail,
        since=since,
    )


def _first_per_instance(*found: Iterable[BrokenNode]) -> tuple[BrokenNode, ...]:
    seen: dict[str, BrokenNode] = {}
    for group in found:
        for node in group:
            seen.setdefault(node.instanceId, node)
    return tuple(seen.values())

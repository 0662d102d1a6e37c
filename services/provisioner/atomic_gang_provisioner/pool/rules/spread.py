"""The gang's network topology, read once its N nodes are Ready (part of Joining),
read ahead from its first Ready Node so that read is a cache hit.

One DescribeInstanceTopology for the set (types EC2 reports no topology for skip
all of this, quietly). The status records each instance's network nodes and the
gang's spread (distinct bottom-layer nodes); the Nodes get the
``topology.k8s.aws/network-node-layer-<n>`` labels they are missing. With
``max-spread: k`` a gang over more than k bottom-layer nodes is released whole
before Satisfied (a shortfall, reason TopologySpread; the joining phase releases it):
no pod ever starts on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.network_layers import layer_labels, supported
from atomic_gang_provisioner.cloud.values import TopologyRead
from atomic_gang_provisioner.pool import outcomes
from atomic_gang_provisioner.pool.model import Observed, update
from atomic_gang_provisioner.pool.story import End, NodeLabels, Part, ReadTopology, ask

REASON = FailureReason.TOPOLOGY_SPREAD
UNREADABLE_WAIT = 30.0  # a max-spread gang waits for a readable topology (or the deadline)


@dataclass(frozen=True, slots=True)
class Placed:
    """The gang may become Satisfied: its status and the labels to add."""

    status: GangNodePoolStatus
    labels: tuple[NodeLabels, ...] = ()


@dataclass(frozen=True, slots=True)
class TooWide:
    """The gang spans more bottom-layer network nodes than its max-spread: a failed
    attempt, released whole."""

    status: GangNodePoolStatus
    message: str


def ahead(pool: GangNodePool, status: GangNodePoolStatus, *, ready: int) -> tuple[str, ...]:
    """The ids to read ahead while the gang joins: once one of its Nodes is Ready its
    instances are running, so EC2 lists them (a type without topology reads nothing)."""
    needed = status.networkNodes is None and supported(pool.spec.shape.instanceType)
    return tuple(status.instanceIds) if needed and ready >= 1 else ()


def ahead_labels(
    status: GangNodePoolStatus, read: TopologyRead | None, observed: Observed
) -> tuple[NodeLabels, ...]:
    """While the gang joins, with its read-ahead answered: the layer labels its Nodes so
    far lack, so that at N Ready only the last Nodes are patched (the labels still
    precede Satisfied, and no longer delay it)."""
    if read is None or read.reason is not None or read.retry_after > 0:
        return ()
    return _labels(_record(status, read), observed)


def gate(
    pool: GangNodePool, status: GangNodePoolStatus, observed: Observed
) -> Part[Placed | TooWide | End]:
    """Read where the set sits (once), then: Placed, TooWide, or an End while the gang
    must wait (the read's budget, an unreadable topology a max-spread needs)."""
    if not supported(pool.spec.shape.instanceType):
        return Placed(status)
    limit = pool.spec.shape.maxSpread
    if status.networkNodes is None:
        read = yield from ask(ReadTopology(tuple(status.instanceIds)))
        if read.retry_after > 0:  # the limiter's 1/s budget: ask again, nothing else
            return End(status=status, requeue_after=read.retry_after)
        failed = read.reason is not None
        if failed and limit is not None:  # readiness needs it: the join deadline bounds this
            return End(status=update(status, lastError=read.message), requeue_after=UNREADABLE_WAIT)
        status = _record(status, read)
        if failed:
            yield outcomes.TopologyUnavailable(error=read.message)
        yield outcomes.SpreadMeasured(pool=pool.name, nodes=status.spread)
    if limit is not None and status.spread > limit:
        yield outcomes.AttemptFellShort(reason=REASON)
        return TooWide(status, _too_wide(status, limit))
    return Placed(status, _labels(status, observed))


def _record(status: GangNodePoolStatus, read: TopologyRead) -> GangNodePoolStatus:
    nodes = {iid: list(read.of(iid)) for iid in status.instanceIds if read.of(iid)}
    return update(status, networkNodes=nodes, spread=read.spread)


def _too_wide(status: GangNodePoolStatus, limit: int) -> str:
    nodes = status.networkNodes or {}
    bottoms = sorted({n[-1] for n in nodes.values() if n})
    return (
        f"The gang spans {status.spread} bottom-layer network nodes ({', '.join(bottoms)}), "
        f"more than max-spread {limit}; releasing the whole set and acquiring again"
    )


def _labels(status: GangNodePoolStatus, observed: Observed) -> tuple[NodeLabels, ...]:
    """The layer labels each Node lacks (a label already set, by us or by
    cloud-provider-aws, is left as it is)."""
    out: list[NodeLabels] = []
    for iid, nodes in sorted((status.networkNodes or {}).items()):
        node = observed.node_for(iid)
        if node is None:
            continue
        have = dict(node.topology_labels)
        missing = tuple((k, v) for k, v in layer_labels(tuple(nodes)).items() if k not in have)
        if missing:
            out.append(NodeLabels(node=node.name, labels=missing))
    return tuple(out)

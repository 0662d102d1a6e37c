"""What a phase's story may say: the asks it yields, the effects and outcomes it tells,
and the end it returns.

A phase is a story (a generator) that reads top to bottom as what it does. It *asks*
for what it needs and resumes with the answer (``instances = yield from ask(Describe(ids))``,
``result = yield from ask(Launch(request, status))``); it *tells* what happened
(``yield outcomes.Released(instances=4)``) and what to do to the cluster on the way
(``yield LabelNodes(...)``); and it *ends* with the status to write (:class:`End`). The
driver (``driver.py``) answers the asks, holds a cloud call back until its status is
stored, and turns the told outcomes, the effects and the end into one write.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from atomic_gang_provisioner.api import GangNodePoolStatus
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    Instance,
    ReleaseRequest,
    ReleaseResult,
    TopologyRead,
)
from atomic_gang_provisioner.pool.outcomes import Outcome

T = TypeVar("T")


class Ask(Generic[T]):
    """Something a story cannot decide without: a read of EC2, or a cloud call. ``T`` is
    the answer the story resumes with."""

    __slots__ = ()


# Reads: EC2 is asked, nothing changes there.
@dataclass(frozen=True, slots=True)
class Describe(Ask[tuple[Instance, ...]]):
    """DescribeInstances of the set (batched with other pools' asks). ``shared``: an
    answer another pool's call got within ec2Api.describeReuseSeconds will do."""

    instance_ids: tuple[str, ...]
    shared: bool = False


@dataclass(frozen=True, slots=True)
class FindByTag(Ask[tuple[Instance, ...]]):
    """The live instances tagged with this generation: a set whose launch answer was
    lost."""

    generation: int


@dataclass(frozen=True, slots=True)
class ReadTopology(Ask[TopologyRead]):
    """One DescribeInstanceTopology of these instances (cached, rate-limited)."""

    instance_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReadTopologyAhead(Ask[TopologyRead | None]):
    """The same read, ahead of need: it only fills the cache, and is answered at once with
    what the cache holds (None: nothing yet), never waited for."""

    instance_ids: tuple[str, ...]


# Cloud calls: each is made only once ``status`` is stored (the driver's write-ahead), so
# a crash after EC2 answered leaves a status that finds what the call did.
@dataclass(frozen=True, slots=True)
class Launch(Ask[AcquireResult]):
    """RunInstances (or CreateFleet) for the generation in the request: N or nothing."""

    request: AcquireRequest
    status: GangNodePoolStatus


@dataclass(frozen=True, slots=True)
class Terminate(Ask[ReleaseResult]):
    """Terminate the recorded set (then its fleets and stray ENIs)."""

    request: ReleaseRequest
    status: GangNodePoolStatus


@dataclass(frozen=True, slots=True)
class DeleteGroup(Ask[bool]):
    """Delete the pool's own placement group; False while EC2 still counts it in use."""


CloudCall = Launch | Terminate


# Effects: done to the cluster before the status is written; no answer.
@dataclass(frozen=True, slots=True, kw_only=True)
class TagInstances:
    instance_ids: tuple[str, ...]
    tags: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeLabels:
    """Labels to add to one Node (only those it does not carry yet)."""

    node: str
    labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class LabelNodes:
    nodes: tuple[NodeLabels, ...]


@dataclass(frozen=True, slots=True)
class TaintNodes:
    """Nodes found broken: tainted ``keys.BROKEN_TAINT:NoExecute`` (their pods leave at
    once, none lands there again) before the status that replaces them is written."""

    nodes: tuple[str, ...]


Effect = TagInstances | LabelNodes | TaintNodes


@dataclass(frozen=True, slots=True, kw_only=True)
class End:
    """Where a story ends: the status to write, when to look again, and (a deleted pool
    with nothing left) whether the finalizer goes."""

    status: GangNodePoolStatus
    requeue_after: float | None = None
    remove_finalizer: bool = False


@dataclass(frozen=True, slots=True)
class Next:
    """The story goes on in the phase ``status`` names, in the same reconcile (a claim
    on an Idle pool is acquired for at once; a joined gang is watched as Satisfied)."""

    status: GangNodePoolStatus


Step = Ask[Any] | Effect | Outcome
Story = Generator[Step, Any, End | Next]
# A part of a story that ends in something else (a health verdict, say).
Part = Generator[Step, Any, T]


def ask(question: Ask[T]) -> Part[T]:
    """``answer = yield from ask(question)``: the answer, typed as the question says."""
    answer = yield question
    return cast(T, answer)

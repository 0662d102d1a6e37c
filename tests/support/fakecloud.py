"""One fake of every cloud role (``cloud.roles.Cloud``: Launcher, Observer, Janitor and
the warm-up), shaped like Karpenter's fake EC2 API: a small world of instances and
placement groups with plain defaults, and behaviours a test sets instead of
subclassing.

Defaults: ``acquire`` launches ``spec.count`` running instances tagged with the pool
and generation (and adopts the set it launched earlier for the same pair, as EC2's
ClientToken does); ``describe_later`` answers the known instances among the ids;
``release`` terminates; ``list_owned`` lists the live instances; the placement-group
calls delete what is not in use; the rest answer nothing.

Behaviours:

- ``next(method, *outcomes)``: the next calls answer these, one each (an exception is
  raised, or set on the Future of a ``*_later`` method), then the default again;
  ``next_hook(method, hook)`` queues one call of ``hook`` with the call's arguments.
- ``on(method, hook)``: every call runs ``hook`` instead of the default (``None``: the
  default again).
- ``hold(method)``: a ``*_later`` method returns a Future nobody answers; the test
  answers it through ``held(method)``.
- ``capacity[instance_type]``: how many live instances of the type EC2 has room for; a
  launch beyond it answers ``Shortfall``, as the EC2 adapter does.
- ``calls(method)`` / ``requests(method)``: every call, its arguments bound by name
  (defaults filled in) and what it returned.
- ``FakeCloud.unused(*allowed)``: every call not scripted fails the test, but those of
  the ``allowed`` methods (a test whose code must not talk to EC2, or only so).

The world follows the answers, scripted or not: a ``Launched`` adds its instances, a
``ReleaseResult`` terminates what it says it terminated, a ``True`` group deletion
removes the group.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, cast

from atomic_gang import keys
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.reservation_fit import Reservation
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    Instance,
    Launched,
    PlacementGroup,
    ReleaseRequest,
    ReleaseResult,
    Shortfall,
    TopologyRead,
    ZoneAttempt,
    tag_tuple,
)
from tests.support.pools import T0

Hook = Callable[..., Any]
# The methods whose answer is a Future: a scripted value or exception is set on one.
LATER = frozenset({"describe_later", "read_topology_later"})


def answered(value: Any) -> Future[Any]:
    """A Future that already holds ``value`` (an exception is raised by ``result()``)."""
    done: Future[Any] = Future()
    if isinstance(value, BaseException):
        done.set_exception(value)
    else:
        done.set_result(value)
    return done


@dataclass
class Call:
    """One call to the fake: its arguments by parameter name, and its answer."""

    method: str
    args: Mapping[str, Any]
    result: Any = None
    raised: BaseException | None = None

    def __getitem__(self, name: str) -> Any:
        return self.args[name]


@dataclass
class FakeCloud:
    """Launcher, Observer, Janitor and ``warm_up`` over one in-memory world."""

    zone: str = "us-east-1a"
    now: Callable[[], datetime] = lambda: T0
    # Live instances of a type EC2 has room for (a type not listed: no limit).
    capacity: dict[str, int] = field(default_factory=dict)
    # Each instance's network nodes, top layer first, for the topology read.
    topology: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The network nodes every instance the fake launches sits under (none: unknown).
    layers: tuple[str, ...] = ()
    # The reservation a launch lands in (None: on-demand).
    reservation_for: Callable[[AcquireRequest], Reservation | None] = lambda _: None
    groups: list[PlacementGroup] = field(default_factory=list)
    in_use: set[str] = field(default_factory=set)  # groups EC2 still counts instances in
    refuse: bool = False  # every call not scripted fails the test ...
    allowed: frozenset[str] = frozenset()  # ... but a call of one of these methods
    instances: dict[str, Instance] = field(default_factory=dict)
    _launches: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)
    _queued: dict[str, list[Hook]] = field(default_factory=dict)
    _hooks: dict[str, Hook] = field(default_factory=dict)
    _held: dict[str, list[Future[Any]]] = field(default_factory=dict)
    _calls: list[Call] = field(default_factory=list)
    _seq: int = 0x100
    _lock: threading.RLock = field(default_factory=threading.RLock)

    @classmethod
    def unused(cls, *allowed: str) -> FakeCloud:
        """A cloud the code under test must not call but for the ``allowed`` methods (a
        scripted answer still works)."""
        for method in allowed:
            cls._known(method)
        return cls(refuse=True, allowed=frozenset(allowed))

    # -- the world ---------------------------------------------------------------

    def add(self, *instances: Instance) -> None:
        """Put instances in the world (EC2 has them: describe, list and find see them)."""
        with self._lock:
            for inst in instances:
                self.instances[inst.instance_id] = inst

    def terminate(self, *instance_ids: str) -> None:
        """EC2 ends instances on its own (a reclaim, a person): no call is recorded."""
        with self._lock:
            for iid in instance_ids:
                if iid in self.instances:
                    self.instances[iid] = replace(self.instances[iid], state="terminated")

    def live(self) -> tuple[Instance, ...]:
        with self._lock:
            return tuple(i for i in self.instances.values() if i.live)

    # -- behaviours ----------------------------------------------------------------

    def next(self, method: str, *outcomes: Any) -> None:
        """The next calls of ``method`` answer these, in order (an exception is raised)."""
        for outcome in outcomes:
            self.next_hook(method, self._scripted(method, outcome))

    def next_hook(self, method: str, hook: Hook) -> None:
        """The next call of ``method`` runs ``hook`` with the call's arguments."""
        self._known(method)
        with self._lock:
            self._queued.setdefault(method, []).append(hook)

    def clear(self, method: str) -> None:
        """Drop the answers queued for ``method``."""
        with self._lock:
            self._queued.pop(method, None)

    def on(self, method: str, hook: Hook | None) -> None:
        """Every call of ``method`` runs ``hook`` (``None``: the default again)."""
        self._known(method)
        with self._lock:
            if hook is None:
                self._hooks.pop(method, None)
            else:
                self._hooks[method] = hook

    def hold(self, method: str) -> None:
        """Calls of a ``*_later`` method return a Future the test answers (``held``)."""
        if method not in LATER:
            raise ValueError(f"{method} answers at once: only {sorted(LATER)} can be held")
        with self._lock:
            self._held[method] = []

    def held(self, method: str) -> list[Future[Any]]:
        with self._lock:
            return list(self._held.get(method, []))

    def calls(self, method: str | None = None) -> list[Call]:
        """The calls of ``method`` (all calls: None), oldest first."""
        with self._lock:
            return [c for c in self._calls if method is None or c.method == method]

    def requests(self, method: str) -> list[Any]:
        """The first argument of each call of ``method`` (the request, the ids, ...)."""
        return [next(iter(c.args.values())) if c.args else None for c in self.calls(method)]

    # -- Launcher ------------------------------------------------------------------

    def acquire(self, request: AcquireRequest) -> AcquireResult:
        with self._lock:
            earlier = self._launches.get((request.pool, request.generation))
            if earlier is not None:  # the same ClientToken: EC2 answers the first launch
                adopted = Launched(
                    instances=tuple(self.instances[i] for i in earlier),
                    client_token=self._token(request),
                    adopted=True,
                )
                self._calls.append(Call("acquire", {"request": request}, result=adopted))
                return adopted
        return cast("AcquireResult", self._call("acquire", self.launch, request=request))

    def launch(self, request: AcquireRequest) -> AcquireResult:
        """The default ``acquire``: N running instances, or a shortfall past capacity."""
        spec = request.spec
        with self._lock:
            room = self.capacity.get(spec.instance_type)
            running = sum(1 for i in self.live() if i.instance_type == spec.instance_type)
            if room is not None and running + spec.count > room:
                message = f"no room for {spec.count} {spec.instance_type} in {self.zone}"
                attempt = ZoneAttempt(
                    zone=self.zone, code="InsufficientInstanceCapacity", message=message
                )
                return Shortfall(attempts=(attempt,))
            tags = tag_tuple(
                {
                    keys.MANAGED: "true",
                    keys.POOL: request.pool,
                    keys.GENERATION: str(request.generation),
                    keys.GROUP: request.repair.group
                    if request.repair is not None
                    else naming.group_id(pool=request.pool, generation=request.generation),
                }
            )
            launched = []
            for _ in range(spec.count):
                iid = f"i-{self._seq:017x}"
                self._seq += 1
                launched.append(
                    Instance(
                        instance_id=iid,
                        state="running",
                        availability_zone=self.zone,
                        instance_type=spec.instance_type,
                        launch_time=self.now(),
                        tags=tags,
                        client_token=self._token(request),
                    )
                )
                if self.layers:
                    self.topology[iid] = self.layers
            result = Launched(
                instances=tuple(launched),
                client_token=self._token(request),
                reservation=self.reservation_for(request),
            )
            self._world_follows("acquire", result, {"request": request})
            return result

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        def terminated(request: ReleaseRequest) -> ReleaseResult:
            return ReleaseResult(terminated=request.instance_ids, deleted_enis=request.enis)

        return cast(ReleaseResult, self._call("release", terminated, request=request))

    def tag(self, instance_ids: Sequence[str], tags: Mapping[str, str]) -> None:
        def overwrite(instance_ids: Sequence[str], tags: Mapping[str, str]) -> None:
            for iid in instance_ids:
                if iid in self.instances:
                    inst = self.instances[iid]
                    merged = {**dict(inst.tags), **tags}
                    kept = {k: v for k, v in merged.items() if v}
                    self.instances[iid] = replace(inst, tags=tag_tuple(kept))

        self._call("tag", overwrite, instance_ids=instance_ids, tags=tags)

    def delete_placement_group(self, pool: str) -> bool:
        def delete(pool: str) -> bool:
            return not any(g.pool == pool and g.name in self.in_use for g in self.groups)

        return cast(bool, self._call("delete_placement_group", delete, pool=pool))

    def forget_pool(self, pool: str) -> None:
        self._call("forget_pool", lambda pool: None, pool=pool)

    # -- Observer ------------------------------------------------------------------

    def find(self, *, pool: str, generation: int) -> tuple[Instance, ...]:
        def tagged(pool: str, generation: int) -> tuple[Instance, ...]:
            return tuple(i for i in self.live() if (i.pool, i.generation) == (pool, generation))

        return cast(
            "tuple[Instance, ...]", self._call("find", tagged, pool=pool, generation=generation)
        )

    def describe_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = (), reuse: bool = False
    ) -> Future[tuple[Instance, ...]]:
        def known(
            instance_ids: Sequence[str], also: Sequence[str], reuse: bool
        ) -> Future[tuple[Instance, ...]]:
            return answered(tuple(self.instances[i] for i in instance_ids if i in self.instances))

        return cast(
            "Future[tuple[Instance, ...]]",
            self._call("describe_later", known, instance_ids=instance_ids, also=also, reuse=reuse),
        )

    def reported_unhealthy(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        """Of these, the ids the world holds in a state other than pending or running (a
        read of answers recorded earlier, not a call: allowed on an ``unused`` cloud)."""
        with self._lock:
            unhealthy = tuple(
                i for i in instance_ids if i in self.instances and not self.instances[i].healthy
            )
        return cast(
            "tuple[str, ...]",
            self._call(
                "reported_unhealthy", lambda **_: unhealthy, no_call=True, instance_ids=instance_ids
            ),
        )

    def read_topology_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = ()
    ) -> Future[TopologyRead]:
        def read(instance_ids: Sequence[str], also: Sequence[str]) -> Future[TopologyRead]:
            live = {i.instance_id for i in self.live()}
            nodes = tuple(
                (i, self.topology[i]) for i in instance_ids if i in live and self.topology.get(i)
            )
            return answered(TopologyRead(nodes=nodes))

        return cast(
            "Future[TopologyRead]",
            self._call("read_topology_later", read, instance_ids=instance_ids, also=also),
        )

    # -- Janitor -------------------------------------------------------------------

    def list_owned(self) -> tuple[Instance, ...]:
        return cast("tuple[Instance, ...]", self._call("list_owned", self.live))

    def recover_enis(self) -> tuple[str, ...]:
        return cast("tuple[str, ...]", self._call("recover_enis", tuple))

    def list_placement_groups(self) -> tuple[PlacementGroup, ...]:
        return cast(
            "tuple[PlacementGroup, ...]",
            self._call("list_placement_groups", lambda: tuple(self.groups)),
        )

    def reap_placement_group(self, name: str) -> bool:
        return cast(bool, self._call("reap_placement_group", self._unused_group, name=name))

    def prune_templates(self) -> tuple[str, ...]:
        return cast("tuple[str, ...]", self._call("prune_templates", tuple))

    def warm_up(self) -> None:
        self._call("warm_up", lambda: None)

    # -- machinery -----------------------------------------------------------------

    def _unused_group(self, name: str) -> bool:
        return name not in self.in_use

    @staticmethod
    def _token(request: AcquireRequest) -> str:
        return f"{request.pool}-{request.generation}"

    @classmethod
    def _known(cls, method: str) -> None:
        if not callable(getattr(cls, method, None)) or method.startswith("_"):
            raise AttributeError(f"the cloud has no call {method!r}")

    def _scripted(self, method: str, outcome: Any) -> Hook:
        def answer(**_: Any) -> Any:
            if method in LATER:
                return outcome if isinstance(outcome, Future) else answered(outcome)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome

        return answer

    def _call(self, method: str, default: Hook, *, no_call: bool = False, **args: Any) -> Any:
        """Record the call, then answer it: a queued answer, the hook, a held Future,
        or the default (refused on an ``unused`` cloud)."""
        bound = inspect.signature(getattr(type(self), method)).bind(self, **args)
        bound.apply_defaults()
        call = Call(method, {k: v for k, v in bound.arguments.items() if k != "self"})
        with self._lock:
            self._calls.append(call)
            queued = self._queued.get(method)
            hook = queued.pop(0) if queued else self._hooks.get(method)
            held = self._held.get(method)
        if hook is None and held is not None:
            future: Future[Any] = Future()
            held.append(future)
            call.result = future
            return future
        if hook is None and self.refuse and not no_call and method not in self.allowed:
            call.raised = AssertionError(f"the cloud was called: {method}")
            raise call.raised
        try:
            if hook is not None:  # the test's own code: run without the fake's lock
                result = hook(**call.args)
            with self._lock:
                if hook is None:
                    result = default(**call.args)
                self._world_follows(method, result, call.args)
        except BaseException as e:
            call.raised = e
            raise
        call.result = result
        return result

    def _world_follows(
        self, method: str, result: Any, args: Mapping[str, Any] | None = None
    ) -> None:
        """What an answer says happened, happens in the world."""
        if isinstance(result, Launched) and not result.adopted:
            self.add(*(i for i in result.instances if i.instance_id not in self.instances))
            request = (args or {}).get("request")
            if isinstance(request, AcquireRequest):
                self._launches[(request.pool, request.generation)] = result.instance_ids
        elif isinstance(result, ReleaseResult):
            self.terminate(*result.terminated)
        elif method in ("delete_placement_group", "reap_placement_group") and result is True:
            given = args or {}
            name, pool = given.get("name"), given.get("pool")
            self.groups = [
                g for g in self.groups if g.name != name and (pool is None or g.pool != pool)
            ]

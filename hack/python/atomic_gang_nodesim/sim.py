"""The simulator loop: EC2 boot plus nodeadm for every running managed instance.

Each tick: one DescribeInstances; for an instance not seen before, read its
user data and parse the NodeConfig (a bad one, or one naming another cluster,
endpoint or CA than EKS reports, never joins); once its boot delay has passed,
create the Node kubelet would register and let kwok make it Ready (its device
plugins' resources, with the devices knob, that much later), unless EKS
would refuse the instance role (no EC2_LINUX access entry, no aws-auth mapping):
then the join is retried, as kubelet retries. An instance
that is no longer pending/running loses its Node, as the cloud node-lifecycle
controller would do. A restarted simulator adopts the Nodes it created before.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from atomic_gang.resources import CONFIG_MAPS, NODES
from atomic_gang_kubelite import AlreadyExistsError, NotFoundError
from atomic_gang_nodesim import capacity
from atomic_gang_nodesim.access import JoinAuthority
from atomic_gang_nodesim.ec2 import Ec2View
from atomic_gang_nodesim.health import hold_condition, hold_not_ready
from atomic_gang_nodesim.knobs import Knobs
from atomic_gang_nodesim.kubeapi import NodeApi
from atomic_gang_nodesim.nodeconfig import JoinSpec, NodeConfigError, parse_user_data
from atomic_gang_nodesim.nodes import SIM_ANNOTATION, Instance, agent_condition, build_node

log = logging.getLogger("atomic_gang_nodesim")
Phase = Literal["booting", "joined", "dropped", "failed"]
GONE_KEPT = 1000  # instances no longer live, kept for GET /state
PARALLEL = 8  # joins, deletions and user-data reads in flight at once
AUTH_RETRY = 2.0  # kubelet keeps retrying a registration EKS refused


@dataclass
class Tracked:
    instance_id: str
    ordinal: int
    phase: Phase
    pool: str = ""
    join_at: float = 0.0
    node: str = ""
    reason: str = ""
    instance: Instance | None = None
    join: JoinSpec | None = None
    devices: dict[str, str] = field(default_factory=dict)  # not advertised yet
    devices_at: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "pool": self.pool, "node": self.node, "reason": self.reason}


class Simulator:
    def __init__(
        self,
        *,
        view: Ec2View,
        kube: NodeApi,
        region: str,
        knobs: Knobs | None = None,
        interval: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.view, self.kube, self.region = view, kube, region
        self.knobs = knobs or Knobs()
        self.interval = interval
        self.clock = clock
        self.tracked: dict[str, Tracked] = {}
        self.gone: collections.OrderedDict[str, Tracked] = collections.OrderedDict()
        self.lock = threading.RLock()
        self.wake = threading.Event()
        self.ticks = 0
        self.describe_seconds = 0.0
        self._discovered = 0
        self.authority = JoinAuthority(
            eks=view.eks, iam=view.iam, cluster=view.cluster, aws_auth=self._aws_auth, clock=clock
        )

    # -- the loop --------------------------------------------------------------
    def adopt(self) -> None:
        """Take over the Nodes an earlier run of the simulator registered."""
        for node in self.kube.list(NODES):
            meta = node.get("metadata") or {}
            iid = (meta.get("annotations") or {}).get(SIM_ANNOTATION)
            if iid and iid not in self.tracked:
                self._discovered += 1
                self.tracked[iid] = Tracked(iid, self._discovered, "joined", node=meta["name"])

    def run(self, stop: threading.Event) -> None:
        self.adopt()
        while not stop.is_set():
            try:
                wait = self.tick()
            except Exception:
                log.exception("tick failed")
                wait = self.interval * 4
            self.wake.wait(timeout=wait)
            self.wake.clear()

    def tick(self) -> float:
        """One round; returns how long to wait before the next.

        Only this thread changes ``tracked``; the lock guards those changes against
        the control API's readers and is never held across a call to EC2 or Kubernetes.
        """
        t0 = self.clock()
        live = {i.instance_id: i for i in self.view.live()}
        self.describe_seconds = self.clock() - t0
        gone = [self._forget(i) for i in list(self.tracked) if i not in live]
        self._each(self._gone, gone)
        fresh = [i for i in live.values() if i.instance_id not in self.tracked]
        found = [
            self._discover(i) for i in sorted(fresh, key=lambda i: (i.private_ip, i.instance_id))
        ]
        self._each(self._boot, [t for t in found if t.phase == "booting"])
        now = self.clock()
        due = [t for t in list(self.tracked.values()) if t.phase == "booting" and t.join_at <= now]
        self._each(self._join, due)
        plugged = [t for t in list(self.tracked.values()) if t.devices and t.devices_at <= now]
        self._each(self._advertise, plugged)
        self._hold_not_ready()
        self._hold_conditions()
        self.ticks += 1
        return self._next_wait()

    def _each(self, fn: Callable[[Tracked], None], items: list[Tracked]) -> None:
        """Run ``fn`` over ``items`` in parallel, as many kubelets would; log failures."""
        if not items:
            return
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(items))) as pool:
            for t, err in zip(items, pool.map(_guard(fn), items), strict=True):
                if err is not None:
                    log.warning("%s: %s failed: %s", t.instance_id, fn.__name__, err)

    def _next_wait(self) -> float:
        # Never spend more than a third of the time describing: moto slows as instances pile up.
        wait = max(self.interval, 2 * self.describe_seconds)
        tracked = list(self.tracked.values())
        due = [t.join_at for t in tracked if t.phase == "booting"]
        due += [t.devices_at for t in tracked if t.devices]
        if due:
            wait = min(wait, max(0.05, min(due) - self.clock()))
        return wait

    # -- one instance ----------------------------------------------------------
    def _discover(self, inst: Instance) -> Tracked:
        """Number it (in launch order) and apply drop rules; booting starts in ``_boot``."""
        with self.lock:
            self._discovered += 1
            t = Tracked(inst.instance_id, self._discovered, "booting", pool=inst.pool)
            t.instance, t.join_at = inst, float("inf")
            self.tracked[inst.instance_id] = t
            rule = self.knobs.take_drop(instance_id=t.instance_id, pool=t.pool, ordinal=t.ordinal)
            if rule is not None:
                t.phase, t.reason = "dropped", "join dropped by a simulator knob"
                log.info("dropping the join of %s (pool %s)", t.instance_id, t.pool)
            return t

    def _boot(self, t: Tracked) -> None:
        assert t.instance is not None
        try:
            join = self._verified_join(t.instance)
        except NodeConfigError as exc:
            with self.lock:
                t.phase, t.reason = "failed", str(exc)
            log.warning("%s will never join: %s", t.instance_id, exc)
            return
        with self.lock:
            t.join = join
            t.join_at = self.clock() + self.knobs.boot.for_instance(t.instance_id)

    def _verified_join(self, inst: Instance) -> JoinSpec:
        join = parse_user_data(self.view.user_data(inst.instance_id))
        if join.cluster != self.view.cluster:
            raise NodeConfigError(f"NodeConfig names cluster {join.cluster!r}")
        eks = self.view.cluster_join()
        if join.endpoint.rstrip("/") != eks.endpoint.rstrip("/"):
            raise NodeConfigError(f"apiServerEndpoint {join.endpoint!r} is not the cluster's")
        if join.certificate_authority != eks.certificate_authority:
            raise NodeConfigError("certificateAuthority is not the cluster's CA: TLS would fail")
        return join

    def _aws_auth(self) -> str | None:
        try:
            found = self.kube.get(CONFIG_MAPS, "aws-auth", namespace="kube-system")
        except NotFoundError:
            return None
        return str((found.get("data") or {}).get("mapRoles", ""))

    def _join(self, t: Tracked) -> None:
        assert t.instance is not None
        assert t.join is not None
        refusal = self.authority.refusal(t.instance.profile_arn)
        if refusal:  # EKS refuses the registration; kubelet tries again
            with self.lock:
                first, t.reason = t.reason != refusal, refusal
                t.join_at = self.clock() + AUTH_RETRY
            if first:
                log.warning("%s cannot register: %s", t.instance_id, refusal)
            return
        info = self.view.instance_type(t.instance.instance_type)
        resources = capacity.capacity(info, efa_interfaces=t.instance.efa_interfaces)
        later = capacity.devices(resources) if self.knobs.devices.seconds else {}
        node = build_node(
            t.instance,
            t.join,
            resources={k: v for k, v in resources.items() if k not in later},
            arch=capacity.architecture(info),
            region=self.region,
        )
        name = node["metadata"]["name"]
        try:
            self.kube.create(NODES, node)
        except AlreadyExistsError:
            if not self._stale_node_removed(name, t.instance_id):
                return  # ours already (a retried create); adopt it below
            self.kube.create(NODES, node)
        with self.lock:
            t.phase, t.node, t.reason = "joined", name, ""
            t.devices, t.devices_at = later, self.clock() + self.knobs.devices.seconds
        log.info("%s joined as %s (pool %s)", t.instance_id, name, t.pool)

    def _advertise(self, t: Tracked) -> None:
        """The device plugins registered: their resources join capacity and allocatable."""
        status = {"status": {"capacity": t.devices, "allocatable": t.devices}}
        with contextlib.suppress(NotFoundError):
            self.kube.patch(NODES, t.node, status, subresource="status")
        with self.lock:
            t.devices = {}

    def _stale_node_removed(self, name: str, instance_id: str) -> bool:
        """A Node of that name for another (earlier) instance: delete it. False if it is ours."""
        old = self.kube.get(NODES, name)
        if str((old.get("spec") or {}).get("providerID", "")).endswith("/" + instance_id):
            return False
        self.kube.delete(NODES, name, uid=old["metadata"]["uid"])
        return True

    def _forget(self, instance_id: str) -> Tracked:
        with self.lock:
            t = self.tracked.pop(instance_id)
            self.gone[instance_id] = t
            while len(self.gone) > GONE_KEPT:
                self.gone.popitem(last=False)
            if instance_id in self.knobs.notReady:
                self.knobs.notReady.remove(instance_id)
            self.knobs.conditions = [
                c for c in self.knobs.conditions if c.instanceId != instance_id
            ]
        return t

    def _gone(self, t: Tracked) -> None:
        if t.phase != "joined":
            return
        with contextlib.suppress(NotFoundError):
            self.kube.delete(NODES, t.node)
        log.info("%s is gone: deleted Node %s", t.instance_id, t.node)

    # -- NotReady --------------------------------------------------------------
    def _hold_not_ready(self) -> None:
        with self.lock:
            held = list(self.knobs.notReady)
        for iid in held:
            t = self.tracked.get(iid)
            if t is not None and t.phase == "joined":
                hold_not_ready(self.kube, t.node, now=rfc3339_now())

    def _hold_conditions(self) -> None:
        with self.lock:
            held = list(self.knobs.conditions)
        for cond in held:
            t = self.tracked.get(cond.instanceId)
            if t is not None and t.phase == "joined":
                hold_condition(self.kube, t.node, agent_condition(cond))


def _guard(fn: Callable[[Tracked], None]) -> Callable[[Tracked], Exception | None]:
    def run(t: Tracked) -> Exception | None:
        try:
            fn(t)
        except Exception as exc:  # one instance's failure must not stop the others
            return exc
        return None

    return run


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

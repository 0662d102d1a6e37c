"""The demo's narration: what changed between two snapshots, and the timeline.

Pure. :meth:`Story.update` turns two snapshots into progress lines and
records milestones (first time each happened); :meth:`Story.summary` prints
the timeline plus the checks a user would want to see: admitted only after
N Ready nodes, N gang pods on N distinct nodes of the gang, the pods of the
ordinary roles (a JobSet's driver, a TrainJob's initializer) on no gang node,
nothing left billing. What differs between a Job, a JobSet and a TrainJob comes
from the story's :class:`Sample`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atomic_gang_devstack.demo.observe import PodState, Snapshot
from atomic_gang_devstack.demo.samples import Sample

RELEASE_REASONS = frozenset({"KeepWarmExpired", "Released"})
MILESTONES = (
    ("applied", "{kind} applied (kubectl apply)"),
    ("quota", "Kueue reserved quota; our check Pending"),
    ("launched", "{count} instances launched in one call"),
    ("first-node", "first node registered"),
    ("all-ready", "all {count} nodes Ready"),
    ("check-ready", "check Ready (podSetUpdates pin the pool and group)"),
    ("admitted", "Workload admitted"),
    ("pods-running", "all {count} {gang_pod}s Running on the gang"),
    ("ordinary-running", "{ordinary} Running on an ordinary node"),
    ("complete", "{done}"),
    ("keep-warm", "pool KeepWarm (nodes kept for reuse)"),
    ("releasing", "pool Releasing (keep-warm expired): TerminateInstances"),
    ("released", "0 instances left, pool Idle"),
)


@dataclass
class Story:
    sample: Sample
    milestones: dict[str, float] = field(default_factory=dict)
    gang_nodes: set[str] = field(default_factory=set)
    pod_nodes: dict[str, str] = field(default_factory=dict)
    pod_roles: dict[str, str] = field(default_factory=dict)
    ready_at_admission: int = -1

    @property
    def pool(self) -> str:
        return self.sample.pool

    @property
    def count(self) -> int:
        return self.sample.count

    @property
    def done_line(self) -> str:
        return f"{self.sample.kind} {self.sample.done_condition.lower()}"

    def mark(self, key: str, t: float) -> None:
        self.milestones.setdefault(key, t)

    @property
    def done(self) -> bool:
        return "released" in self.milestones

    def update(self, prev: Snapshot, cur: Snapshot, t: float) -> list[str]:
        lines = [
            *self._nodes(prev, cur, t),
            *self._workload(prev, cur, t),
            *self._pool(prev, cur, t),
            *self._pods(prev, cur, t),
        ]
        for reason, message in cur.pool_events[len(prev.pool_events) :]:
            if reason in RELEASE_REASONS:
                self.mark("releasing", t)
                lines.append(f"pool {self.pool}: {reason}: {message}")
        if cur.live_instances != prev.live_instances:
            lines.append(f"EC2: {cur.live_instances} instance(s) of pool {self.pool} live")
        idle = cur.pool_phase == "Idle" and cur.live_instances == 0 and not cur.nodes
        if "keep-warm" in self.milestones and idle:
            self.mark("released", t)
        return lines

    def _workload(self, prev: Snapshot, cur: Snapshot, t: float) -> list[str]:
        out = []
        if cur.quota_reserved and not prev.quota_reserved:
            self.mark("quota", t)
            out.append("Kueue: quota reserved; the Workload waits on our AdmissionCheck")
        check = (cur.check_state, cur.check_message, cur.check_pod_sets)
        if check != (prev.check_state, prev.check_message, prev.check_pod_sets):
            if cur.check_state:
                updates = ", ".join(cur.check_pod_sets)
                pinned = f" (podSetUpdates for {updates})" if updates else ""
                out.append(f"check {cur.check_state}: {cur.check_message}{pinned}")
            if cur.check_state == "Ready":
                self.mark("check-ready", t)
        if cur.admitted and not prev.admitted:
            self.mark("admitted", t)
            ready = sum(1 for n in cur.nodes.values() if n.ready and n.group == cur.group)
            self.ready_at_admission = ready
            out.append(f"Kueue: Workload admitted ({ready}/{self.count} gang nodes Ready)")
        if cur.completed and not prev.completed:
            self.mark("complete", t)
            out.append(self.done_line)
        return out

    def _pool(self, prev: Snapshot, cur: Snapshot, t: float) -> list[str]:
        out = []
        if cur.instance_ids and cur.instance_ids != prev.instance_ids:
            self.mark("launched", t)
            out.append(f"EC2: launched {' '.join(cur.instance_ids)} (group {cur.group})")
        if cur.pool_phase != prev.pool_phase and cur.pool_phase:
            extra = f" until {cur.keep_warm_until}" if cur.pool_phase == "KeepWarm" else ""
            out.append(f"pool {self.pool}: {prev.pool_phase or '-'} → {cur.pool_phase}{extra}")
            if cur.pool_phase == "KeepWarm":
                self.mark("keep-warm", t)
            if cur.pool_phase == "Releasing":
                self.mark("releasing", t)
        return out

    def _nodes(self, prev: Snapshot, cur: Snapshot, t: float) -> list[str]:
        out = []
        # Ready k/N counts up over the nodes that turned Ready within this one poll.
        was_ready = {name for name, n in prev.nodes.items() if n.ready}
        ready = sum(
            n.ready and n.group == cur.group for k, n in cur.nodes.items() if k in was_ready
        )
        for name, node in sorted(cur.nodes.items()):
            old = prev.nodes.get(name)
            if old is None:
                self.mark("first-node", t)
                self.gang_nodes.add(name)
                out.append(f"node {name} registered ({node.instance_id}, {node.zone})")
            if node.ready and (old is None or not old.ready):
                ready += node.group == cur.group
                out.append(f"node {name} Ready ({ready}/{self.count})")
                if ready >= self.count:
                    self.mark("all-ready", t)
        for name in sorted(set(prev.nodes) - set(cur.nodes)):
            out.append(f"node {name} deleted (its instance is gone)")
        return out

    def _pods(self, prev: Snapshot, cur: Snapshot, t: float) -> list[str]:
        out = []
        for name, pod in sorted(cur.pods.items()):
            old = prev.pods.get(name)
            if pod.node and (old is None or not old.node):
                self.pod_nodes[name], self.pod_roles[name] = pod.node, pod.role
                out.append(f"pod {name} → {pod.node}{self._role(pod)}")
            if old is None or old.phase != pod.phase:
                out.append(f"pod {name} {pod.phase}")
        running = [p for p in cur.pods.values() if p.phase == "Running"]
        if sum(self.sample.is_gang(p.role) for p in running) >= self.count:
            self.mark("pods-running", t)
        if any(
            p.role in self.sample.ordinary_roles and p.node not in self.gang_nodes for p in running
        ):
            self.mark("ordinary-running", t)
        return out

    def _role(self, pod: PodState) -> str:
        """A JobSet's or TrainJob's pod's role and what its node is; nothing for a Job's
        pods (one role)."""
        if not pod.role:
            return ""
        where = "a gang node" if pod.node in self.gang_nodes else "an ordinary node"
        return f" ({pod.role}, {where})"

    def summary(self, calls: dict[str, int]) -> list[str]:
        lines = ["", "timeline (seconds after kubectl apply)"]
        words = {
            "kind": self.sample.kind,
            "count": self.count,
            "gang_pod": self.sample.gang_pod,
            "ordinary": "/".join(self.sample.ordinary_roles) + " pod",
            "done": self.done_line,
        }
        reached = [
            (self.milestones[key], label) for key, label in MILESTONES if key in self.milestones
        ]
        for t, label in sorted(reached, key=lambda m: m[0]):  # stable: ties keep their order
            lines.append(f"  {t:6.1f}  {label.format(**words)}")
        calls_line = f"AWS calls by the provisioner for this {self.sample.kind}: " + _calls(calls)
        lines += ["", *self.checks(), "", calls_line]
        return lines

    def checks(self) -> list[str]:
        order = self.milestones.get("admitted", 0) >= self.milestones.get("all-ready", 1e9)
        gang = {p: n for p, n in self.pod_nodes.items() if self.sample.is_gang(self.pod_roles[p])}
        used = set(gang.values())
        on_gang = bool(used) and used <= self.gang_nodes
        one_each = len(gang) == len(used) == self.count
        n, pod = self.count, self.sample.gang_pod
        return [
            f"{_mark(order and self.ready_at_admission >= n)}  admitted only after "
            f"{n}/{n} nodes were Ready",
            f"{_mark(on_gang and one_each)}  every {pod} ran on a node of the gang "
            f"({len(used)} nodes, {_per_node(gang)})",
            *(self._off_gang(role) for role in self.sample.ordinary_roles),
            f"{_mark(self.done)}  released: no instance of the pool left in EC2",
        ]

    def _off_gang(self, role: str) -> str:
        nodes = sorted({n for p, n in self.pod_nodes.items() if self.pod_roles[p] == role})
        ok = bool(nodes) and not self.gang_nodes.intersection(nodes)
        where = ", ".join(nodes) or "never scheduled"
        return f"{_mark(ok)}  the {role} pod ran on no gang node ({where})"

    @property
    def ok(self) -> bool:
        return all(line.startswith("ok") for line in self.checks())


def _mark(ok: bool) -> str:
    return "ok  " if ok else "FAIL"


def _per_node(pod_nodes: dict[str, str]) -> str:
    if len(pod_nodes) == len(set(pod_nodes.values())):
        return "one pod each"
    return f"{len(pod_nodes)} pods: some nodes ran more than one"


def _calls(calls: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(calls.items())) or "none"

"""The demo's narration: what changed between two snapshots, and the timeline.

Pure. :meth:`Story.update` turns two snapshots into progress lines and
records milestones (first time each happened); :meth:`Story.summary` prints
the timeline plus the checks a user would want to see: admitted only after
N Ready nodes, N pods on N distinct nodes of the gang, nothing left billing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atomic_gang_devstack.demo.observe import Snapshot

RELEASE_REASONS = frozenset({"KeepWarmExpired", "Released"})
MILESTONES = (
    ("applied", "Job applied (kubectl apply)"),
    ("quota", "Kueue reserved quota; our check Pending"),
    ("launched", "N instances launched in one call"),
    ("first-node", "first node registered"),
    ("all-ready", "all N nodes Ready"),
    ("check-ready", "check Ready (podSetUpdates pin the pool and group)"),
    ("admitted", "Workload admitted"),
    ("pods-running", "all N pods Running on the gang"),
    ("complete", "Job complete"),
    ("keep-warm", "pool KeepWarm (nodes kept for reuse)"),
    ("releasing", "pool Releasing (keep-warm expired): TerminateInstances"),
    ("released", "0 instances left, pool Idle"),
)


@dataclass
class Story:
    pool: str
    count: int
    milestones: dict[str, float] = field(default_factory=dict)
    gang_nodes: set[str] = field(default_factory=set)
    pod_nodes: dict[str, str] = field(default_factory=dict)
    ready_at_admission: int = -1

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
        if (cur.check_state, cur.check_message) != (prev.check_state, prev.check_message):
            if cur.check_state:
                out.append(f"check {cur.check_state}: {cur.check_message}")
            if cur.check_state == "Ready":
                self.mark("check-ready", t)
        if cur.admitted and not prev.admitted:
            self.mark("admitted", t)
            ready = sum(1 for n in cur.nodes.values() if n.ready and n.group == cur.group)
            self.ready_at_admission = ready
            out.append(f"Kueue: Workload admitted ({ready}/{self.count} gang nodes Ready)")
        if cur.job_complete and not prev.job_complete:
            self.mark("complete", t)
            out.append("Job complete")
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
        for name, node in sorted(cur.nodes.items()):
            old = prev.nodes.get(name)
            if old is None:
                self.mark("first-node", t)
                self.gang_nodes.add(name)
                out.append(f"node {name} registered ({node.instance_id}, {node.zone})")
            if node.ready and (old is None or not old.ready):
                ready = sum(1 for n in cur.nodes.values() if n.ready and n.group == cur.group)
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
                self.pod_nodes[name] = pod.node
                out.append(f"pod {name} → {pod.node}")
            if old is None or old.phase != pod.phase:
                out.append(f"pod {name} {pod.phase}")
        if sum(p.phase == "Running" for p in cur.pods.values()) >= self.count:
            self.mark("pods-running", t)
        return out

    def summary(self, calls: dict[str, int]) -> list[str]:
        lines = ["", "timeline (seconds after kubectl apply)"]
        for key, label in MILESTONES:
            if key in self.milestones:
                text = label.replace("N ", f"{self.count} ")
                lines.append(f"  {self.milestones[key]:6.1f}  {text}")
        calls_line = "AWS calls by the provisioner for this Job: " + _calls(calls)
        lines += ["", *self.checks(), "", calls_line]
        return lines

    def checks(self) -> list[str]:
        def mark(ok: bool) -> str:
            return "ok  " if ok else "FAIL"

        order = self.milestones.get("admitted", 0) >= self.milestones.get("all-ready", 1e9)
        used = set(self.pod_nodes.values())
        on_gang = bool(used) and used <= self.gang_nodes
        one_each = len(self.pod_nodes) == len(used) == self.count
        return [
            f"{mark(order and self.ready_at_admission >= self.count)}  admitted only after "
            f"{self.count}/{self.count} nodes were Ready",
            f"{mark(on_gang and one_each)}  every pod ran on a node of the gang "
            f"({len(used)} nodes, {_per_node(self.pod_nodes)})",
            f"{mark(self.done)}  released: no instance of the pool left in EC2",
        ]

    @property
    def ok(self) -> bool:
        return all(line.startswith("ok") for line in self.checks())


def _per_node(pod_nodes: dict[str, str]) -> str:
    if len(pod_nodes) == len(set(pod_nodes.values())):
        return "one pod each"
    return f"{len(pod_nodes)} pods: some nodes ran more than one"


def _calls(calls: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(calls.items())) or "none"

"""The box under a system bench: who used its CPU over a window, and how long any
apiserver write took meanwhile.

On the 2-core VM the whole stack shares, a controller's reaction is a few apiserver
round trips, so a run is only readable beside the box's own state: ``CpuSampler``
reads every process's CPU seconds from /proc every few seconds, ``WriteProbe`` runs
``bench.apiserver_probe`` (a ConfigMap PATCH every 200 ms from a process of its own).
"""

from __future__ import annotations

import collections
import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self, TypeVar

from atomic_gang_devstack.kubectl import Kubectl
from bench.apiserver_view import Counts, apiserver_counts

# Short names for the stack's processes, matched in their command lines in this order.
NAMES = (
    "kube-apiserver",
    "etcd",
    "kube-controller-manager",
    "kube-scheduler",
    "kueue",
    "kwok",
    "atomic_gang_provisioner",
    "atomic_gang_webhook",
    "atomic_gang_fakeaws",
    "atomic_gang_nodesim",
    "bench.apiserver_probe",
    "bench.",
)
Snapshot = tuple[float, dict[int, tuple[str, float]]]  # (when, pid -> (name, CPU s))
STALL = 3.0  # a sampler this late woke from a stall of the whole box, not a busy CPU
T = TypeVar("T")


def process_name(cmdline: str) -> str:
    return next((n for n in NAMES if n in cmdline), "other")


def snapshot() -> Snapshot:
    ticks = os.sysconf("SC_CLK_TCK")
    procs: dict[int, tuple[str, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        procs[int(entry.name)] = (process_name(cmd), (int(fields[11]) + int(fields[12])) / ticks)
    return time.time(), procs


def steal_seconds() -> float:
    """CPU seconds the hypervisor gave other guests while ours waited (/proc/stat's
    steal column, all cores): what a slow run's box lost to its neighbours."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The first ``model name`` in /proc/cpuinfo, or "" when there is none (arm64)."""
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return ""


def cpu_between(first: Snapshot, last: Snapshot) -> dict[str, float]:
    """CPU seconds by process name between two snapshots (a process born between
    them counts from zero)."""
    used: dict[str, float] = collections.defaultdict(float)
    for pid, (name, cpu) in last[1].items():
        used[name] += cpu - first[1].get(pid, (name, 0.0))[1]
    return dict(sorted(used.items(), key=lambda kv: -kv[1]))


class _Background:
    """Runs ``_run`` on a daemon thread while the context is open; ``_stop`` ends it."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        raise NotImplementedError


def nearest(samples: list[tuple[float, T]], start: float, end: float) -> tuple[float, T, T] | None:
    """(seconds between, first, last) of the samples nearest to ``start`` and ``end``;
    None with fewer than two."""
    if len(samples) < 2:
        return None
    first = min(samples, key=lambda s: abs(s[0] - start))
    last = min(samples, key=lambda s: abs(s[0] - end))
    return last[0] - first[0], first[1], last[1]


class CpuSampler(_Background):
    """Snapshots every ``every`` seconds on a thread, for windows found afterwards."""

    def __init__(self, every: float = 2.0) -> None:
        super().__init__("cpu-sampler")
        self.snaps: list[Snapshot] = []
        self.steals: list[tuple[float, float]] = []  # (when, steal seconds so far)
        self._every = every

    def _run(self) -> None:
        while True:
            self.snaps.append(snapshot())
            self.steals.append((time.time(), steal_seconds()))
            if self._stop.wait(self._every):
                return

    def window(self, start: float, end: float) -> tuple[float, dict[str, float]]:
        """(seconds covered, CPU seconds by process) between the snapshots nearest to
        ``start`` and ``end``."""
        found = nearest([(snap[0], snap) for snap in self.snaps], start, end)
        if found is None:
            return 0.0, {}
        seconds, first, last = found
        return seconds, cpu_between(first, last)

    def stalls(self, start: float, end: float) -> list[float]:
        """Seconds lost between samples taken within the window, where the sampler woke
        at least ``STALL`` seconds late: every process stood still (a VM paused, e.g. for
        a snapshot), so the run's latencies there are not the stack's."""
        times = [snap[0] for snap in self.snaps if start - self._every <= snap[0] <= end]
        gaps = (b - a - self._every for a, b in itertools.pairwise(times))
        return [round(g, 1) for g in gaps if g >= STALL]

    def steal(self, start: float, end: float) -> float:
        """CPU seconds stolen by the hypervisor between the samples nearest to the edges."""
        found = nearest(self.steals, start, end)
        return 0.0 if found is None else found[2] - found[1]


class WriteProbe:
    """``bench.apiserver_probe`` in a child process while the context is open."""

    def __init__(self, kubeconfig: Path, out: Path) -> None:
        self._args = [sys.executable, "-m", "bench.apiserver_probe", str(kubeconfig), str(out)]
        self._out = out
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> WriteProbe:
        self._proc = subprocess.Popen(self._args)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=30)

    @property
    def exit_code(self) -> int | None:
        """None while the probe runs (or before it started)."""
        return None if self._proc is None else self._proc.poll()

    def latencies(self, start: float, end: float) -> list[float]:
        """The probe's write latencies (seconds) for writes sent within the window."""
        if not self._out.exists():
            return []
        pairs = (line.split() for line in self._out.read_text().splitlines())
        return [float(lat) for at, lat in pairs if start <= float(at) <= end]


class RequestCounter(_Background):
    """The apiserver's write counters (``kubectl get --raw /metrics``, as a Prometheus
    scrape reads them: 2.9 MB at 800 nodes, so not on a timer) read at the start and
    each time ``edges()`` grows (e.g. the rush's first Node Ready and last check Ready),
    for windows found afterwards."""

    def __init__(self, kubectl: Kubectl, edges: Callable[[], int]) -> None:
        super().__init__("request-counter")
        self.samples: list[tuple[float, Counts]] = []
        self._kubectl = kubectl
        self._edges = edges

    def _run(self) -> None:
        passed = -1
        while not self._stop.wait(0.2):  # a poll of in-process stamps, no I/O
            if (now := self._edges()) > passed:
                passed = now
                done = self._kubectl.run("get", "--raw", "/metrics", check=False)
                if done.returncode == 0:
                    self.samples.append((time.time(), apiserver_counts(done.stdout)))

    def window(self, start: float, end: float) -> tuple[float, Counts]:
        """(seconds covered, writes by verb and resource) between the samples nearest
        to ``start`` and ``end``, most first."""
        found = nearest(self.samples, start, end)
        if found is None:
            return 0.0, {}
        seconds, first, last = found
        delta = {k: v - first.get(k, 0.0) for k, v in last.items()}
        return seconds, dict(sorted(delta.items(), key=lambda kv: -kv[1]))

"""The scale bench's view of the box: CPU by process over a window, the write probe's
latencies in a window, and the wall's end at the last release."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from atomic_gang_devstack.kubectl import Kubectl
from bench import box
from bench.scale_report import CONTROLLER, last_release
from tests.support.wait import wait_for
from tests.unit.bench.test_apiserver_view import request_line


@pytest.mark.parametrize(
    ("cmdline", "name"),
    [
        pytest.param(
            "/bin/kube-apiserver-v1.36.3 --etcd-servers=x", "kube-apiserver", id="apiserver"
        ),
        pytest.param("/bin/etcd-v3.6 --data-dir=/tmp/x", "etcd", id="etcd"),
        pytest.param("python -m atomic_gang_provisioner", "atomic_gang_provisioner", id="ours"),
        pytest.param("python -m bench.apiserver_probe k o", "bench.apiserver_probe", id="probe"),
        pytest.param("python -m bench.scale --gangs 100", "bench.", id="the-bench"),
        pytest.param("/usr/sbin/sshd", "other", id="anything-else"),
    ],
)
def test_processes_are_named_by_their_command_line(cmdline: str, name: str) -> None:
    assert box.process_name(cmdline) == name


def test_cpu_between_two_snapshots_counts_a_new_process_from_zero() -> None:
    first: box.Snapshot = (0.0, {1: ("etcd", 10.0), 2: ("kueue", 5.0)})
    last: box.Snapshot = (10.0, {1: ("etcd", 12.5), 2: ("kueue", 5.5), 3: ("kueue", 1.0)})
    assert box.cpu_between(first, last) == {"etcd": 2.5, "kueue": 1.5}


def test_the_sampler_reads_the_window_nearest_its_snapshots() -> None:
    sampler = box.CpuSampler()
    sampler.snaps = [
        (100.0, {1: ("etcd", 1.0)}),
        (102.0, {1: ("etcd", 2.0)}),
        (104.0, {1: ("etcd", 4.0)}),
        (106.0, {1: ("etcd", 7.0)}),
    ]
    assert sampler.window(101.6, 104.4) == (2.0, {"etcd": 2.0})
    assert box.CpuSampler().window(0.0, 1.0) == (0.0, {})


def test_the_sampler_reads_the_steal_nearest_its_samples() -> None:
    sampler = box.CpuSampler()
    sampler.steals = [(100.0, 3.0), (102.0, 3.5), (104.0, 5.0)]
    assert sampler.steal(101.9, 104.2) == 1.5
    assert box.CpuSampler().steal(0.0, 1.0) == 0.0


def test_a_sampler_that_woke_late_in_the_window_reports_the_stall() -> None:
    sampler = box.CpuSampler(every=2.0)
    sampler.snaps = [(t, {}) for t in (100.0, 102.0, 104.1, 130.0, 132.0, 150.0)]
    assert sampler.stalls(101.0, 131.0) == [23.9]  # 104.1 -> 130.0; 132 -> 150 is outside
    assert sampler.stalls(131.0, 133.0) == []


def test_the_cpu_model_is_the_first_model_name(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC 9R14\nprocessor\t: 1\nmodel name\t: other\n"
    )
    assert box.cpu_model(info) == "AMD EPYC 9R14"
    info.write_text("processor\t: 0\nBogoMIPS\t: 243.75\n")
    assert box.cpu_model(info) == ""
    assert box.steal_seconds() >= 0.0  # this box's /proc/stat parses


def test_a_real_snapshot_holds_this_process() -> None:
    when, procs = box.snapshot()
    assert when > 0
    assert procs[os.getpid()][1] > 0


def test_the_probe_reports_the_writes_sent_within_the_window(tmp_path: Path) -> None:
    out = tmp_path / "probe.txt"
    out.write_text("100.0 0.010\n101.0 0.200\n102.0 0.030\n")
    probe = box.WriteProbe(tmp_path / "kubeconfig", out)
    assert probe.latencies(100.5, 102.0) == [0.2, 0.03]
    assert box.WriteProbe(tmp_path / "kubeconfig", tmp_path / "none").latencies(0, 1) == []


def call(action: str, at: float, *, caller: str = CONTROLLER, outcome: str = "ok") -> Any:
    return {"action": action, "at": at, "seconds": 0.5, "caller": caller, "outcome": outcome}


def test_the_wall_ends_when_the_last_termination_was_answered() -> None:
    calls = [
        call("TerminateInstances", 120.0),
        call("TerminateInstances", 125.0),
        call("TerminateInstances", 126.0, outcome="error:InternalError"),
        call("TerminateInstances", 130.0, caller="bench"),
        call("DescribeInstances", 140.0),
    ]
    assert last_release(calls, fallback=133.0) == 125.5
    assert last_release([call("RunInstances", 1.0)], fallback=133.0) == 133.0


def test_request_counter_windows_take_the_nearest_samples() -> None:
    counter = box.RequestCounter(
        Kubectl(Path("kubectl"), Path("admin.yaml")), lambda: 0
    )  # not started
    counter.samples = [
        (100.0, {"POST events": 1.0}),
        (105.0, {"POST events": 4.0, "PUT pods": 2.0}),
        (110.0, {"POST events": 10.0, "PUT pods": 9.0}),
    ]
    assert counter.window(104.0, 111.0) == (5.0, {"PUT pods": 7.0, "POST events": 6.0})


class _CannedKubectl(Kubectl):
    """``get --raw /metrics`` answers a growing count of node status patches."""

    def __init__(self) -> None:
        super().__init__(Path("kubectl"), Path("admin.yaml"))
        self.scrapes = 0

    def run(self, *args: str, **_: Any) -> subprocess.CompletedProcess[str]:
        self.scrapes += 1
        text = request_line("200", "nodes", "status", "PATCH", 10 * self.scrapes)
        return subprocess.CompletedProcess(list(args), 0, stdout=text + "\n", stderr="")


def test_request_counter_reads_at_the_start_and_at_each_edge() -> None:
    kubectl, edges = _CannedKubectl(), [0]
    with box.RequestCounter(kubectl, lambda: edges[0]) as counter:
        wait_for(lambda: len(counter.samples) == 1, timeout=10)
        edges[0] = 1
        wait_for(lambda: len(counter.samples) == 2, timeout=10)
        edges[0] = 2
        wait_for(lambda: len(counter.samples) == 3, timeout=10)
    assert kubectl.scrapes == 3  # nothing in between: no edge passed
    first, last = counter.samples[0][0], counter.samples[2][0]
    assert counter.window(first, last)[1] == {"writes PATCH nodes/status": 20.0}

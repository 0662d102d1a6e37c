"""Every script in bench/ runs, at its smallest size, so none rots unnoticed.

Figures are not judged here (benches measure; docs/benchmarks.md records): each run must
exit 0 and print the table or line its users read. The modules without a command line
(the helpers the runners share) must import.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from atomic_gang_devstack.bins import REPO_ROOT

pytestmark = pytest.mark.e2e

# module[:variant] -> (smallest arguments, text its output must hold)
RUNS: dict[str, tuple[tuple[str, ...], str]] = {
    "ec2_calls": (("--acquisitions", "2", "--sweep", "10"), "| acquire runinstances, warm |"),
    "review_metrics": ((), "| counting |"),
    "idle_replay": (("--runs", "1"), "today"),
    "webhook": (("--rounds", "1", "--seconds", "1", "--connections", "1"), "| target | met |"),
    "webhook_soak": (("--seconds", "2"), "valid reviews:"),
    "webhook_ab": (("--rev", "HEAD", "--rounds", "1", "--seconds", "1"), "HEAD"),
    "reaction": (("--gangs", "1", "--count", "1"), "QuotaReserved -> first RunInstances"),
    "scale": (
        ("--gangs", "1", "--count", "1", "--runs-for", "1", "--timeout", "300"),
        "controller peak RSS",
    ),
    "scale:foreign": (
        (
            *("--gangs", "1", "--count", "1", "--runs-for", "1", "--timeout", "300"),
            *("--foreign-nodes", "20", "--foreign-workloads", "20"),
        ),
        "## footprint",
    ),
    "repair": (
        (
            *("--gangs", "2", "--regimes", "held", "--boot", "1", "--jitter", "0"),
            *("--settle", "1", "--recover-timeout", "120"),
        ),
        "| phase | regime | N |",
    ),
    "idle_cost": (
        ("--baseline-only", "--jobs", "1", "--window", "5", "--max-seconds", "120"),
        "RunInstances calls",
    ),
}
LIBRARIES = sorted(
    p.stem
    for p in (REPO_ROOT / "bench").glob("*.py")
    if p.stem not in {name.partition(":")[0] for name in RUNS} and p.stem != "__init__"
)


def test_every_runnable_bench_is_listed() -> None:
    """A new bench with a command line gets a smoke run here."""
    runnable = {
        name
        for name in LIBRARIES
        if 'if __name__ == "__main__":' in (REPO_ROOT / "bench" / f"{name}.py").read_text()
    }
    assert runnable <= {"incremental_baseline", "apiserver_probe"}, runnable


@pytest.mark.parametrize("name", sorted(RUNS))
def test_bench_runs_at_its_smallest_size(name: str, tmp_path: Path) -> None:
    args, marker = RUNS[name]
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name.partition(':')[0]}", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, tail
    assert marker in done.stdout + done.stderr, tail


@pytest.mark.parametrize("name", LIBRARIES)
def test_bench_helpers_import(name: str) -> None:
    importlib.import_module(f"bench.{name}")

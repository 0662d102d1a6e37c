"""The dev stack's restart wrapper: a failed provisioner comes back, a clean exit ends it,
and SIGTERM/SIGINT end it, however many arrive at once."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from atomic_gang_devstack import restart
from tests.support.signals import burst, read_line


def test_restarts_until_a_clean_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(restart, "BACKOFF", (0.01,))
    runs = tmp_path / "runs"
    script = (
        "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
        "n = len(p.read_text()) if p.exists() else 0; p.write_text('x' * (n + 1)); "
        "sys.exit(0 if n >= 2 else 7)"
    )
    assert restart.main(["--", sys.executable, "-c", script, str(runs)]) == 0
    assert runs.read_text() == "xxx"  # failed, failed, then clean


def test_needs_a_command() -> None:
    assert restart.main(["--"]) == 2


ROUNDS = 10
FAILS = "import sys; sys.exit(3)"
RUNS = (
    "import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "print('up', flush=True); signal.pause()"
)


def _supervise(child: str) -> subprocess.Popen[str]:
    # restart.py is run by its path: importing the package costs more than the round.
    return subprocess.Popen(
        [sys.executable, restart.__file__, "--", sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    ("child", "started", "ends_with"),
    [
        pytest.param(FAILS, "--- restart: exited 3", lambda sig: 3, id="in-backoff"),
        pytest.param(RUNS, "up", lambda sig: 128 + sig, id="child-running"),
    ],
)
def test_a_burst_of_stop_signals_ends_the_supervisor_every_time(
    child: str, started: str, ends_with: Callable[[int], int]
) -> None:
    """The handler once set an Event: a second signal inside the first's ``Event.set``
    waited for the Event's lock forever (the double SIGTERM of ``make``)."""
    rng = random.Random(16)
    for round_ in range(ROUNDS):
        sig = signal.SIGTERM if round_ % 2 == 0 else signal.SIGINT
        proc = _supervise(child)
        try:
            assert read_line(proc, within=30).startswith(started)
            burst(proc, sig, rng)
            # A signal after main() restored the default handlers ends it too, by that signal.
            assert proc.wait(timeout=10) in (ends_with(sig), -sig), f"round {round_}"
        finally:
            proc.kill()
            proc.wait()

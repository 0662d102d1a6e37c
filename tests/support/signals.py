"""Stop-signal bursts for tests of processes that must end on SIGTERM/SIGINT: ``make``
forwards the SIGTERM that a process-group kill already delivered, so a second signal can
land inside the first one's handler."""

from __future__ import annotations

import random
import selectors
import signal
import subprocess
import time

SIGNALS = 5


def read_line(proc: subprocess.Popen[str], within: float) -> str:
    """The child's next stdout line, or an AssertionError after ``within`` seconds."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout=within):
            raise AssertionError(f"no line from the child within {within}s")
    return proc.stdout.readline().strip()


def burst(proc: subprocess.Popen[str], sig: signal.Signals, rng: random.Random) -> None:
    """SIGNALS signals, each a few microseconds after the last."""
    for _ in range(SIGNALS):
        proc.send_signal(sig)
        until = time.perf_counter() + rng.uniform(0, 0.0001)
        while time.perf_counter() < until:  # a busy wait: sleep() cannot wait microseconds
            pass

"""Starting and stopping component processes, each in its own process group.

A process is identified by its PID *and* its start time (``/proc/<pid>/stat``
field 22), so a recycled PID is never mistaken for ours and never killed.
Teardown signals the whole group the launcher created, never anything else.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

DEAD = frozenset({"Z", "X"})  # zombie (not yet reaped) or dead
KILL_WAIT = 10.0  # seconds a SIGKILLed process may take to go (uninterruptible sleep)
# Popen objects of children started by this very process, so they get reaped.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class StopTimeoutError(RuntimeError):
    """A process outlived SIGKILL (stuck in uninterruptible sleep, e.g. on a dead mount)."""


class ProcRecord(BaseModel):
    """What the state file remembers about one started process."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    pid: int
    start_ticks: int
    argv: tuple[str, ...]
    log: str


class Stat(NamedTuple):
    state: str
    pgrp: int
    start_ticks: int


def parse_stat(text: str) -> Stat:
    """State, process group and start time (clock ticks) from a ``/proc/<pid>/stat`` line."""
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = text[text.rindex(")") + 2 :].split()
    return Stat(rest[0], int(rest[2]), int(rest[19]))


def _stat(pid: int | str) -> Stat | None:
    try:
        return parse_stat(Path(f"/proc/{pid}/stat").read_text(encoding="utf-8"))
    except (OSError, ValueError, IndexError):
        return None


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it when the launcher dies (PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


_SPAWNER_LOCK = threading.Lock()
_SPAWNER: ThreadPoolExecutor | None = None


def _spawner() -> ThreadPoolExecutor:
    """One long-lived thread that forks every tied child.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not
    the process; components start on short-lived threads, so forking there
    would kill the children as soon as the stack is up.
    """
    global _SPAWNER  # noqa: PLW0603 - a process-wide singleton on purpose
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="devstack-spawner")
        return _SPAWNER


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
    die_with_parent: bool = False,
) -> ProcRecord:
    """Start ``argv`` in a new session (own process group), output appended to ``log``.

    ``die_with_parent`` ties the child's life to this process (test sessions);
    without it the child outlives the launcher (``make dev-up``).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        out.write(f"--- devstack: starting {' '.join(argv)}\n".encode())
        out.flush()

        def popen() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                start_new_session=True,
                preexec_fn=_die_with_parent if die_with_parent else None,  # noqa: PLW1509
            )

        child = _spawner().submit(popen).result() if die_with_parent else popen()
    _CHILDREN[child.pid] = child
    stat = _stat(child.pid)
    return ProcRecord(
        name=name,
        pid=child.pid,
        start_ticks=stat.start_ticks if stat else -1,
        argv=tuple(argv),
        log=str(log),
    )


def alive(rec: ProcRecord) -> bool:
    """True while the recorded process (same PID and start time) is running."""
    child = _CHILDREN.get(rec.pid)
    if child is not None and child.poll() is not None:
        return False
    stat = _stat(rec.pid)
    return stat is not None and stat.start_ticks == rec.start_ticks and stat.state not in DEAD


def exit_code(rec: ProcRecord) -> int | None:
    child = _CHILDREN.get(rec.pid)
    return None if child is None else child.poll()


def _group_exists(pgid: int) -> bool:
    """Whether any live (non-zombie) process is still in group ``pgid``."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(entry.name)
            if stat is not None and stat.pgrp == pgid and stat.state not in DEAD:
                return True
    return False


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _wait_gone_after_kill(rec: ProcRecord) -> None:
    deadline = time.monotonic() + KILL_WAIT
    while alive(rec):
        if time.monotonic() > deadline:
            raise StopTimeoutError(
                f"{rec.name} (pid {rec.pid}) still alive {KILL_WAIT:.0f}s after SIGKILL;"
                f" see /proc/{rec.pid}/status and its log {rec.log}"
            )
        time.sleep(0.02)


def stop(rec: ProcRecord, *, grace: float = 10.0) -> bool:
    """SIGTERM the process group, SIGKILL it after ``grace`` seconds. False if not ours."""
    if not alive(rec):
        child = _CHILDREN.get(rec.pid)
        if child is not None and child.poll() is not None:
            del _CHILDREN[rec.pid]  # reaped; a live child with a recycled record stays
        return False
    # The leader's PID is the group id (start_new_session); it was checked just above.
    _signal_group(rec.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and (alive(rec) or _group_exists(rec.pid)):
        time.sleep(0.05)
    if alive(rec) or _group_exists(rec.pid):
        _signal_group(rec.pid, signal.SIGKILL)
        _wait_gone_after_kill(rec)
    child = _CHILDREN.pop(rec.pid, None)
    if child is not None:
        child.wait()
    return True


def log_tail(path: str | Path, lines: int = 25) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])

"""Process records: identity by PID and start time; teardown of the whole group."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from atomic_gang_devstack import procs, waits


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            "42 (etcd) S 1 40 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9876 0",
            ("S", 40, 9876),
            id="plain",
        ),
        pytest.param(
            "7 (a) b) c) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0", ("R", 7, 55), id="parens"
        ),
    ],
)
def test_parse_stat_handles_odd_command_names(line: str, expected: tuple[str, int, int]) -> None:
    assert procs.parse_stat(line) == expected


def test_spawn_then_stop_kills_the_group(tmp_path: Path) -> None:
    # The child starts a grandchild in the same group; stop must take both.
    script = "import subprocess,time; subprocess.Popen(['sleep','60']); time.sleep(60)"
    rec = procs.spawn("sleeper", [sys.executable, "-c", script], log=tmp_path / "s.log")
    assert procs.alive(rec)

    assert procs.stop(rec, grace=5)
    assert not procs.alive(rec)
    assert not procs._group_exists(rec.pid)
    assert "starting" in (tmp_path / "s.log").read_text()


def test_a_recycled_pid_is_not_ours(tmp_path: Path) -> None:
    rec = procs.spawn("sleeper", ["sleep", "30"], log=tmp_path / "s.log")
    impostor = rec.model_copy(update={"start_ticks": rec.start_ticks + 1})
    try:
        assert not procs.alive(impostor)
        assert not procs.stop(impostor)
        assert procs.alive(rec)
    finally:
        procs.stop(rec)


def test_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert procs.log_tail(log, 2) == "line 98\nline 99"
    assert procs.log_tail(tmp_path / "missing") == "(no log)"


def test_die_with_parent_ends_the_child_with_its_launcher(tmp_path: Path) -> None:
    # A short-lived launcher starts a sleeper tied to it, reports it, and exits.
    code = (
        "from pathlib import Path; from atomic_gang_devstack import procs; "
        f"r = procs.spawn('s', ['sleep', '60'], log=Path({str(tmp_path / 's.log')!r}), "
        "die_with_parent=True); print(r.model_dump_json())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    rec = procs.ProcRecord.model_validate_json(out)

    waits.wait_until(lambda: not procs.alive(rec), name="sleeper", what="gone", timeout=10)


def test_a_tied_child_survives_the_thread_that_started_it(tmp_path: Path) -> None:
    # PR_SET_PDEATHSIG follows the forking *thread*; components start on
    # short-lived threads, so the fork must happen on a long-lived one.
    recs: list[procs.ProcRecord] = []
    t = threading.Thread(
        target=lambda: recs.append(
            procs.spawn("s", ["sleep", "30"], log=tmp_path / "s.log", die_with_parent=True)
        )
    )
    t.start()
    t.join()
    (rec,) = recs
    try:
        # A negative check needs a bounded wait: the signal would land within ms.
        with pytest.raises(waits.ComponentFailedError):
            waits.wait_until(
                lambda: not procs.alive(rec), name="sleeper", what="killed", timeout=1.0
            )
    finally:
        procs.stop(rec)


def test_stop_gives_up_on_a_process_that_outlives_sigkill(monkeypatch: pytest.MonkeyPatch) -> None:
    # A process in uninterruptible sleep ignores SIGKILL: stop must not wait forever.
    sent: list[signal.Signals] = []
    monkeypatch.setattr(procs, "alive", lambda rec: True)
    monkeypatch.setattr(procs, "_group_exists", lambda pgid: True)
    monkeypatch.setattr(procs, "_signal_group", lambda pgid, sig: sent.append(sig))
    monkeypatch.setattr(procs, "KILL_WAIT", 0.2)
    rec = procs.ProcRecord(name="stuck", pid=999999, start_ticks=1, argv=("x",), log="/l/stuck.log")

    started = time.monotonic()
    with pytest.raises(procs.StopTimeoutError, match=r"stuck \(pid 999999\).*SIGKILL.*stuck\.log"):
        procs.stop(rec, grace=0.1)

    assert sent == [signal.SIGTERM, signal.SIGKILL]
    assert time.monotonic() - started < 5

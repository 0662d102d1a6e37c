"""Process records: identity by PID and start time; teardown of the whole group."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from atomic_gang_devstack import procs


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

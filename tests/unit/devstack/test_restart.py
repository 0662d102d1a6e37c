"""The dev stack's restart wrapper: a failed provisioner comes back, a clean exit ends it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from atomic_gang_devstack import restart


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

"""The launcher's lifecycle on real processes, without the control plane.

Two small HTTP servers stand in for components: ``up`` twice reports the
running stack, ``down`` leaves no recorded process or process group behind and
removes the kubeconfig copy, and a failing component's error names its log.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from atomic_gang_devstack import procs, waits
from atomic_gang_devstack.component import Context, ProcessComponent
from atomic_gang_devstack.stack import Stack
from atomic_gang_devstack.state import StackOptions, load


class _Http(ProcessComponent):
    """``python -m http.server`` on a free port, probed over HTTP."""

    ready_timeout = 30.0

    def argv(self, ctx: Context) -> list[str]:
        port = str(ctx.port(self.name))
        return [
            sys.executable,
            "-m",
            "http.server",
            port,
            "--bind",
            "127.0.0.1",
            "-d",
            str(ctx.dir),
        ]

    def probe(self, ctx: Context) -> bool:
        return waits.http_ok(f"http://127.0.0.1:{ctx.port(self.name)}/")


class WebA(_Http):
    name = "web-a"

    def prepare(self, ctx: Context) -> None:
        ctx.client_kubeconfig("admin", "dev-admin")  # what the apiserver component writes


class WebB(_Http):
    name = "web-b"
    needs = ("web-a",)


class Boom(ProcessComponent):
    name = "boom"
    needs = ("web-a",)

    def argv(self, ctx: Context) -> list[str]:
        return ["sh", "-c", "echo boom; exit 3"]

    def probe(self, ctx: Context) -> bool:
        return False


def _options(tmp_path: Path) -> tuple[StackOptions, Path]:
    kubeconfig_out = tmp_path / "out" / "kubeconfig"
    options = StackOptions(
        state_dir=tmp_path / "stack", kubeconfig_out=kubeconfig_out, detach=False
    )
    return options, kubeconfig_out


def _gone(rec: procs.ProcRecord) -> bool:
    return not procs.alive(rec) and not procs._group_exists(rec.pid)


def test_up_twice_reports_the_running_stack_and_down_stops_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    options, kubeconfig_out = _options(tmp_path)
    stack = Stack(options, [WebA(), WebB()])
    first = stack.up()
    recs = dict(first.state.procs)
    try:
        assert set(recs) == {"web-a", "web-b"}
        assert all(procs.alive(r) for r in recs.values())
        assert "server: https://127.0.0.1:" in kubeconfig_out.read_text()

        with caplog.at_level(logging.INFO, logger="atomic_gang_devstack"):
            second = Stack(options, [WebA(), WebB()]).up()  # a second `make dev-up`

        assert "already running" in caplog.text
        assert second.state.procs == recs
        assert second.state.ports == first.state.ports
        assert Stack(options, [WebA(), WebB()]).status() == {"web-a": "healthy", "web-b": "healthy"}
    finally:
        assert stack.down()

    assert all(_gone(r) for r in recs.values())
    assert not kubeconfig_out.exists()
    assert load(options.state_dir) is None
    assert not stack.down()  # nothing left to stop


def test_a_failing_component_names_its_log_and_nothing_is_left_running(tmp_path: Path) -> None:
    options, kubeconfig_out = _options(tmp_path)
    stack = Stack(options, [WebA(), Boom()])

    with pytest.raises(waits.ComponentFailedError) as failed:
        stack.up()

    message = str(failed.value)
    assert f"log: {options.state_dir / 'logs' / 'boom.log'}" in message
    assert "exited (code 3)" in message
    assert "boom" in message.split("last lines:", 1)[1]
    st = load(options.state_dir)
    assert st is not None
    assert not st.ready
    assert all(_gone(r) for r in st.procs.values())
    assert not kubeconfig_out.exists()
    stack.down()


def test_a_process_that_outlives_sigkill_does_not_stop_the_teardown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options, _ = _options(tmp_path)
    stack = Stack(options, [WebA(), WebB()])
    recs = dict(stack.up().state.procs)
    real_stop = procs.stop

    def stuck_b(rec: procs.ProcRecord, *, grace: float = 10.0) -> bool:
        if rec.name == "web-b":
            raise procs.StopTimeoutError("web-b still alive after SIGKILL")
        return real_stop(rec, grace=grace)

    monkeypatch.setattr(procs, "stop", stuck_b)
    with pytest.raises(procs.StopTimeoutError, match="web-b"):
        stack.down()

    assert _gone(recs["web-a"])  # stopped although web-b (stopped first) got stuck
    assert load(options.state_dir) is not None  # kept, so a later down can retry
    monkeypatch.setattr(procs, "stop", real_stop)
    assert stack.down()
    assert all(_gone(r) for r in recs.values())

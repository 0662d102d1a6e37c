"""``make demo``'s entry point: Ctrl-C anywhere tears the stack down and exits 130."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from atomic_gang_devstack.demo import __main__ as demo
from atomic_gang_devstack.demo.samples import TRAINJOB, Sample
from atomic_gang_devstack.waits import ComponentFailedError


class StubStack:
    """Stands in for :class:`Stack`: ``up`` raises what it is given, ``down`` counts."""

    def __init__(self, options: Any, components: Any, *, up_raises: BaseException | None) -> None:
        self.options, self.up_raises, self.downs = options, up_raises, 0

    def up(self) -> object:
        if self.up_raises is not None:
            raise self.up_raises
        return object()

    def down(self) -> None:
        self.downs += 1


class StubControl:
    closed = 0

    def __init__(self, endpoint: str) -> None:
        pass

    def clear_calls(self) -> None:
        pass

    def close(self) -> None:
        StubControl.closed += 1


class StubBins:
    @staticmethod
    def load() -> StubBins:
        return StubBins()

    def ensure(self, names: tuple[str, ...] = ()) -> None:
        pass


def _interrupt(*_: object, **__: object) -> None:
    raise KeyboardInterrupt


def _stub(monkeypatch: pytest.MonkeyPatch, up_raises: BaseException | None) -> list[StubStack]:
    made: list[StubStack] = []

    def make(options: Any, components: Any) -> StubStack:
        made.append(StubStack(options, components, up_raises=up_raises))
        return made[-1]

    monkeypatch.setattr(demo, "Stack", make)
    monkeypatch.setattr(demo, "default_components", lambda options: [])
    monkeypatch.setattr(demo, "Bins", StubBins)
    return made


def test_ctrl_c_while_the_stack_starts_tears_it_down(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = _stub(monkeypatch, KeyboardInterrupt())
    assert demo.main(["--state-dir", str(tmp_path)]) == 130
    assert [s.downs for s in made] == [1]
    out = capsys.readouterr().out
    assert "interrupted: tearing everything down" in out
    assert out.rstrip().endswith("stack stopped")


def test_ctrl_c_during_the_story_tears_down_and_closes_clients(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = _stub(monkeypatch, None)
    monkeypatch.setattr(demo, "_show_setup", lambda ctx, sample: None)
    monkeypatch.setattr(demo, "fakeaws_endpoint", lambda ctx: "http://127.0.0.1:1")
    monkeypatch.setattr(demo, "ControlClient", StubControl)
    monkeypatch.setattr(demo, "_watch", _interrupt)
    StubControl.closed = 0
    assert demo.main(["--state-dir", str(tmp_path)]) == 130
    assert [s.downs for s in made] == [1]
    assert StubControl.closed == 1
    assert "interrupted: tearing everything down" in capsys.readouterr().out


def test_a_failed_start_tears_down_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made = _stub(monkeypatch, ComponentFailedError("kueue", "log tail"))
    assert demo.main(["--state-dir", str(tmp_path)]) == 1
    assert [s.downs for s in made] == [1]


def test_help_documents_the_stories(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # argparse would break the file names at a hyphen
    with pytest.raises(SystemExit) as done:
        demo.main(["--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--story {job,jobset,trainjob}" in out
    assert "(default: job)" in out
    assert "hack/demo/allreduce-jobset.yaml" in out
    assert "trainjob (hack/demo/llama-trainjob.yaml): a gang TrainJob" in out


@pytest.mark.parametrize(
    ("argv", "story", "ordinary_nodes"),
    [
        pytest.param([], "job", 0, id="default"),
        pytest.param(["--story", "jobset"], "jobset", 1, id="jobset"),
        pytest.param(["--story", "trainjob"], "trainjob", 1, id="trainjob"),
    ],
)
def test_the_story_picks_the_sample_and_its_ordinary_nodes(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    story: str,
    ordinary_nodes: int,
) -> None:
    made = _stub(monkeypatch, None)
    told: list[str] = []

    def run(ctx: object, timeout: float, *, sample: Sample) -> int:
        told.append(sample.story)
        return 0

    monkeypatch.setattr(demo, "run", run)
    assert demo.main(["--state-dir", str(tmp_path), *argv]) == 0
    assert told == [story]
    assert made[0].options.fake_nodes == ordinary_nodes


@pytest.mark.parametrize("story", ["jobset", "trainjob"])
def test_only_the_job_story_is_told_in_cluster(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    story: str,
) -> None:
    made = _stub(monkeypatch, None)
    with pytest.raises(SystemExit) as done:
        demo.main(["--state-dir", str(tmp_path), "--story", story, "--in-cluster"])
    assert done.value.code == 2
    assert made == []  # refused before anything starts
    assert "--in-cluster tells the job story only" in capsys.readouterr().err


def test_the_setup_line_names_the_controllers_the_stories_need(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The JobSet and Trainer controllers run the JobSet and TrainJob stories' objects."""
    options = SimpleNamespace(
        in_cluster=False, jobset=True, trainer=True, kubeconfig_out=Path("/s/kubeconfig")
    )
    kubectl = SimpleNamespace(run=lambda *argv: SimpleNamespace(stdout="NAME\n"))
    ctx = SimpleNamespace(
        options=options, state=SimpleNamespace(ready_seconds=27.0), kubectl=kubectl
    )
    demo._show_setup(ctx, TRAINJOB)  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "control plane, Kueue, JobSet, Trainer, moto, webhook and 2 provisioners" in out
    assert "$ kubectl apply -f hack/demo/llama-trainjob.yaml" in out

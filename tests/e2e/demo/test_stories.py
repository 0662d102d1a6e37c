"""``make demo`` end to end, each story as a user runs it: ``main`` starts the demo's
own stack in a temporary state dir, applies the sample, narrates it and exits 0 only
when every self-check holds. The JobSet story's workers get the gang's nodes, its
driver an ordinary node; the TrainJob story's trainer pods get the gang's nodes, its
dataset initializer an ordinary node, and runs before them; every story launches once
and releases everything."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atomic_gang_devstack.demo import __main__ as demo
from atomic_gang_devstack.demo.samples import JOB, JOBSET, TRAINJOB, Sample
from tests.e2e.names import gnp

pytestmark = pytest.mark.e2e

STORY_TIMEOUT_SECONDS = 240  # the story's own deadline; warm it takes under a minute


def _tell(sample: Sample, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    argv = ["--story", sample.story, "--state-dir", str(tmp_path / "demo")]
    code = demo.main([*argv, "--timeout", str(STORY_TIMEOUT_SECONDS)])
    out = capsys.readouterr().out
    assert code == 0, out
    return out.splitlines()


def _checks(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith(("ok  ", "FAIL"))]


def _narrated(lines: list[str]) -> list[str]:
    """The story's progress lines, without their ``[  1.8s]`` stamps."""
    return [re.sub(r"^\[\s*[0-9.]+s\] ", "", line) for line in lines if line.startswith("[")]


def _calls(lines: list[str], kind: str) -> str:
    prefix = f"AWS calls by the provisioner for this {kind}: "
    (line,) = [line for line in lines if line.startswith(prefix)]
    return line.removeprefix(prefix)


def test_the_jobset_story_runs_the_workers_on_the_gang_and_the_driver_off_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _tell(JOBSET, tmp_path, capsys)
    assert _checks(lines) == [
        "ok    admitted only after 4/4 nodes were Ready",
        "ok    every workers pod ran on a node of the gang (4 nodes, one pod each)",
        "ok    the driver pod ran on no gang node (kwok-node-0)",
        "ok    released: no instance of the pool left in EC2",
    ]
    said = _narrated(lines)
    assert any(re.fullmatch(r"check Ready: .* \(podSetUpdates for workers\)", s) for s in said)
    assert "Kueue: Workload admitted (4/4 gang nodes Ready)" in said
    workers = [s for s in said if re.fullmatch(r"pod allreduce-jobset-workers-.* → .*", s)]
    assert len(workers) == 4
    assert all(s.endswith("(workers, a gang node)") for s in workers), workers
    (driver,) = [s for s in said if re.fullmatch(r"pod allreduce-jobset-driver-.* → .*", s)]
    assert driver.endswith("→ kwok-node-0 (driver, an ordinary node)"), driver
    assert "JobSet completed" in said
    pool = gnp(JOBSET.namespace, "jobset-p4d")
    assert any(s.startswith(f"pool {pool}: Satisfied → KeepWarm until ") for s in said)
    assert f"pool {pool}: Released: Terminated 4 instance(s); nothing left billing" in said
    calls = _calls(lines, "JobSet")
    assert "RunInstances 1," in calls
    assert "TerminateInstances 1" in calls


def _stamp(lines: list[str], text: str) -> float:
    """When the story first said ``text`` (seconds after kubectl apply)."""
    for line in lines:
        found = re.fullmatch(r"\[\s*([0-9.]+)s\] (.*)", line)
        if found and found.group(2) == text:
            return float(found.group(1))
    raise AssertionError(f"never said: {text}")


def test_the_trainjob_story_runs_the_trainers_on_the_gang_and_the_initializer_off_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _tell(TRAINJOB, tmp_path, capsys)
    assert _checks(lines) == [
        "ok    admitted only after 4/4 nodes were Ready",
        "ok    every trainer pod ran on a node of the gang (4 nodes, one pod each)",
        "ok    the dataset-initializer pod ran on no gang node (kwok-node-0)",
        "ok    released: no instance of the pool left in EC2",
    ]
    said = _narrated(lines)
    assert any(re.fullmatch(r"check Ready: .* \(podSetUpdates for node\)", s) for s in said)
    assert "Kueue: Workload admitted (4/4 gang nodes Ready)" in said
    trainers = [s for s in said if re.fullmatch(r"pod llama-trainjob-node-.* → .*", s)]
    assert len(trainers) == 4
    assert all(s.endswith("(node, a gang node)") for s in trainers), trainers
    (init,) = [
        s for s in said if re.fullmatch(r"pod llama-trainjob-dataset-initializer-.* → .*", s)
    ]
    assert init.endswith("→ kwok-node-0 (dataset-initializer, an ordinary node)"), init
    # The trainer nodes depend on the initializer: it has finished before any starts.
    (init_pod,) = re.findall(r"pod (\S+) →", init)
    first_trainer = min(_stamp(lines, s) for s in trainers)
    assert _stamp(lines, f"pod {init_pod} Succeeded") <= first_trainer
    assert "TrainJob complete" in said
    pool = gnp(TRAINJOB.namespace, "trainjob-p4d")
    assert any(s.startswith(f"pool {pool}: Satisfied → KeepWarm until ") for s in said)
    assert f"pool {pool}: Released: Terminated 4 instance(s); nothing left billing" in said
    calls = _calls(lines, "TrainJob")
    assert "RunInstances 1," in calls
    assert "TerminateInstances 1" in calls


def test_the_job_story_still_passes_its_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _tell(JOB, tmp_path, capsys)
    assert _checks(lines) == [
        "ok    admitted only after 4/4 nodes were Ready",
        "ok    every pod ran on a node of the gang (4 nodes, one pod each)",
        "ok    released: no instance of the pool left in EC2",
    ]
    said = _narrated(lines)
    assert any(re.fullmatch(r"check Ready: .* \(podSetUpdates for main\)", s) for s in said)
    assert "Job complete" in said
    assert "RunInstances 1," in _calls(lines, "Job")

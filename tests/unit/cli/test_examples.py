"""The Jobs users copy (the README's Usage example and the demo's) follow every rule,
one pod per node included: valid, and no warning. So does every sample ``make demo``
applies (a Job, a JobSet, a TrainJob), as ``atomic-gang validate`` with the dev stack's
settings judges its file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from atomic_gang import review_job
from atomic_gang.settings import load_settings
from atomic_gang_cli.validate import check_file
from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.demo.samples import SAMPLES, Sample

ROOT = Path(__file__).resolve().parents[3]


def _readme_usage_job() -> dict[str, Any]:
    usage = (ROOT / "README.md").read_text().split("## Usage", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", usage, re.DOTALL)
    assert block is not None
    job: dict[str, Any] = yaml.safe_load(block.group(1))
    return job


@pytest.mark.parametrize(
    "job",
    [
        pytest.param(_readme_usage_job(), id="readme-usage"),
        pytest.param(
            yaml.safe_load((ROOT / "hack" / "demo" / "allreduce-pretrain.yaml").read_text()),
            id="demo",
        ),
    ],
)
def test_example_jobs_are_valid_without_warnings(job: dict[str, Any]) -> None:
    settings = load_settings(None, **dev_objects.DEV_SETTINGS)
    found = review_job(job, settings)
    assert found is not None
    assert found.violations == ()
    assert found.warnings == ()


@pytest.mark.parametrize("sample", [pytest.param(s, id=s.story) for s in SAMPLES.values()])
def test_the_demo_samples_pass_validate_without_warnings(sample: Sample) -> None:
    settings = load_settings(None, **dev_objects.DEV_SETTINGS)
    assert check_file(str(sample.file), settings) == ([], [])

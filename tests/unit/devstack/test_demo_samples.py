"""The demo's samples describe their files: kind, name, pool, count and gang roles as
the YAML applied says them, and the roles off the gang are exactly the other ones."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from atomic_gang import keys
from atomic_gang_devstack.demo.samples import JOB, JOBSET, SAMPLES, Sample

SAMPLE_PARAMS = [pytest.param(s, id=s.story) for s in SAMPLES.values()]


def _load(sample: Sample) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(sample.file.read_text())
    return obj


@pytest.mark.parametrize("sample", SAMPLE_PARAMS)
def test_a_sample_names_what_its_file_applies(sample: Sample) -> None:
    obj = _load(sample)
    meta = obj["metadata"]
    assert obj["kind"] == sample.kind
    assert obj["apiVersion"] == f"{sample.resource.group}/{sample.resource.version}"
    assert (meta["name"], meta.get("namespace", "default")) == (sample.name, sample.namespace)
    assert meta["labels"][keys.POOL] == sample.pool
    assert meta["annotations"][keys.COUNT] == str(sample.count)


@pytest.mark.parametrize("sample", SAMPLE_PARAMS)
def test_the_gang_and_ordinary_roles_are_the_files(sample: Sample) -> None:
    obj = _load(sample)
    gang = obj["metadata"]["annotations"].get(keys.GANG_ROLES)
    assert sample.gang_roles == (tuple(gang.split(",")) if gang else ())
    roles = [rj["name"] for rj in (obj["spec"].get("replicatedJobs") or [])]
    assert sample.ordinary_roles == tuple(r for r in roles if not sample.is_gang(r))
    assert bool(sample.ordinary_nodes) == bool(sample.ordinary_roles)  # somewhere to run


def test_the_jobset_sample_counts_its_workers_only() -> None:
    workers = next(rj for rj in _load(JOBSET)["spec"]["replicatedJobs"] if rj["name"] == "workers")
    assert workers["replicas"] * workers["template"]["spec"]["parallelism"] == JOBSET.count
    assert JOBSET.is_gang("workers")
    assert not JOBSET.is_gang("driver")
    assert JOBSET.gang_pod == "workers pod"


def test_a_job_has_one_role_and_every_pod_is_the_gang() -> None:
    assert JOB.is_gang("")
    assert JOB.gang_pod == "pod"
    assert JOB.ordinary_roles == ()


@pytest.mark.parametrize(
    ("sample", "workload", "owned"),
    [
        pytest.param(JOB, "job-allreduce-pretrain-3f2a1", True, id="job"),
        pytest.param(JOBSET, "jobset-allreduce-jobset-9c0de", True, id="jobset"),
        pytest.param(JOB, "jobset-allreduce-pretrain-3f2a1", False, id="job-not-a-jobsets"),
        pytest.param(JOBSET, "job-allreduce-jobset-9c0de", False, id="jobset-not-a-jobs"),
        pytest.param(JOB, "job-allreduce-pretrain2-3f2a1", False, id="job-not-a-longer-name"),
    ],
)
def test_a_sample_knows_its_workload_by_kueues_name(
    sample: Sample, workload: str, owned: bool
) -> None:
    assert sample.owns_workload(workload) is owned


def test_the_pod_selector_finds_the_samples_pods() -> None:
    assert JOB.pod_selector == "batch.kubernetes.io/job-name=allreduce-pretrain"
    assert JOBSET.pod_selector == "jobset.sigs.k8s.io/jobset-name=allreduce-jobset"

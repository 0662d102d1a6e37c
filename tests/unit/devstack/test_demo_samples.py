"""The demo's samples describe their files: kind, name, pool, count and gang roles as
the YAML applied says them (and as the provisioner reads its gang), and the roles off
the gang are exactly the other ones."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from atomic_gang import keys
from atomic_gang.gang_object import validate
from atomic_gang.settings import load_settings
from atomic_gang_devstack import dev_objects
from atomic_gang_devstack import trainer_manifests as tm
from atomic_gang_devstack.demo.samples import JOB, JOBSET, SAMPLES, TRAINJOB, Sample

SAMPLE_PARAMS = [pytest.param(s, id=s.story) for s in SAMPLES.values()]


def _load(sample: Sample) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(sample.file.read_text())
    return obj


def _patched_jobs(trainjob: dict[str, Any]) -> list[dict[str, Any]]:
    """The replicatedJobs a TrainJob's runtime patches name, in order."""
    return [
        rj
        for patch in trainjob["spec"].get("runtimePatches") or []
        for rj in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    ]


def _roles(obj: dict[str, Any]) -> list[str]:
    """Every role of the file's pods: a JobSet's replicatedJobs; for a TrainJob, those of
    its runtime, which the demo's patch names one by one; none for a Job."""
    if obj["kind"] == "TrainJob":
        return [rj["name"] for rj in _patched_jobs(obj)]
    return [rj["name"] for rj in (obj["spec"].get("replicatedJobs") or [])]


@pytest.mark.parametrize("sample", SAMPLE_PARAMS)
def test_a_sample_names_what_its_file_applies(sample: Sample) -> None:
    obj = _load(sample)
    meta = obj["metadata"]
    assert obj["kind"] == sample.kind
    assert obj["apiVersion"] == f"{sample.resource.group}/{sample.resource.version}"
    assert (meta["name"], meta.get("namespace", "default")) == (sample.name, sample.namespace)
    assert meta["labels"][keys.POOL] == sample.pool_label
    assert sample.pool == f"{sample.namespace}.{sample.pool_label}"  # the pool it names
    assert meta["annotations"][keys.COUNT] == str(sample.count)
    assert meta["annotations"][keys.KEEP_WARM_TTL] == "20s"  # released within the story


@pytest.mark.parametrize("sample", SAMPLE_PARAMS)
def test_the_gang_and_ordinary_roles_are_the_files(sample: Sample) -> None:
    obj = _load(sample)
    gang = validate(obj, load_settings(None, **dev_objects.DEV_SETTINGS))
    assert gang is not None
    assert (gang.kind, gang.spec.count) == (sample.kind, sample.count)
    assert sample.gang_roles == (gang.roles if sample.role_label else ())  # a Job: every pod
    assert sample.ordinary_roles == tuple(r for r in _roles(obj) if not sample.is_gang(r))
    assert bool(sample.ordinary_nodes) == bool(sample.ordinary_roles)  # somewhere to run


def test_the_jobset_sample_counts_its_workers_only() -> None:
    workers = next(rj for rj in _load(JOBSET)["spec"]["replicatedJobs"] if rj["name"] == "workers")
    assert workers["replicas"] * workers["template"]["spec"]["parallelism"] == JOBSET.count
    assert JOBSET.is_gang("workers")
    assert not JOBSET.is_gang("driver")
    assert JOBSET.gang_pod == "workers pod"


def test_the_trainjob_sample_is_num_nodes_trainers_behind_the_stacks_initializer() -> None:
    obj = _load(TRAINJOB)
    assert obj["spec"]["runtimeRef"] == {"name": tm.TORCH_WITH_INITIALIZER_RUNTIME}
    assert obj["spec"]["trainer"]["numNodes"] == TRAINJOB.count
    assert keys.GANG_ROLES not in obj["metadata"]["annotations"]  # the default: node
    assert _roles(obj) == [tm.INITIALIZER_ROLE, tm.TRAINER_ROLE]  # the runtime's, in order
    assert TRAINJOB.gang_roles == (tm.TRAINER_ROLE,)
    assert TRAINJOB.ordinary_roles == (tm.INITIALIZER_ROLE,)
    assert TRAINJOB.gang_pod == "trainer pod"


def test_every_step_of_the_trainjob_runs_for_15s_as_the_jobs_pods_do() -> None:
    job_pod = _load(JOB)["spec"]["template"]["metadata"]["annotations"]
    for rj in _patched_jobs(_load(TRAINJOB)):
        assert rj["template"]["spec"]["template"]["metadata"]["annotations"] == job_pod


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
        pytest.param(TRAINJOB, "trainjob-llama-trainjob-5b7e2", True, id="trainjob"),
        pytest.param(TRAINJOB, "jobset-llama-trainjob-5b7e2", False, id="trainjob-not-its-jobsets"),
    ],
)
def test_a_sample_knows_its_workload_by_kueues_name(
    sample: Sample, workload: str, owned: bool
) -> None:
    assert sample.owns_workload(workload) is owned


def test_the_pod_selector_finds_the_samples_pods() -> None:
    assert JOB.pod_selector == "batch.kubernetes.io/job-name=allreduce-pretrain"
    assert JOBSET.pod_selector == "jobset.sigs.k8s.io/jobset-name=allreduce-jobset"
    # The Trainer names the TrainJob's JobSet after it; its pods are that JobSet's.
    assert TRAINJOB.pod_selector == "jobset.sigs.k8s.io/jobset-name=llama-trainjob"

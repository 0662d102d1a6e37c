"""What the Workload cache keeps of a Workload (``slim``) reads exactly as the whole
Workload does: ``view(slim(wl)) == view(wl)`` over generated Workloads shaped as Kueue
writes them (a Job's, a JobSet's, hand-written ones with odd templates), while
managedFields, pod templates and Kueue's admission details are gone."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atomic_gang_provisioner.reconcilers.workloads import workload_read_changed
from atomic_gang_provisioner.workload.slim import carries_check, slim
from atomic_gang_provisioner.workload.view import (
    ELASTIC_ANNOTATION,
    JOB_UID_LABEL,
    check_index,
    view,
)

Obj = dict[str, Any]
TIME = "2026-12-01T10:00:00Z"
QUANTITY = st.sampled_from(["1", "8", "0", "2k", "1Gi", "500m", "16Gi", "x", 4, None])
RESOURCE = st.sampled_from(
    ["nvidia.com/gpu", "vpc.amazonaws.com/efa", "aws.amazon.com/neuron", "cpu", "memory"]
)
RESOURCES = st.fixed_dictionaries(
    {},
    optional={
        "requests": st.dictionaries(RESOURCE, QUANTITY, max_size=3),
        "limits": st.dictionaries(RESOURCE, QUANTITY, max_size=3),
        "claims": st.just([{"name": "gpu"}]),
    },
)


@st.composite
def containers(draw: st.DrawFn, *, init: bool = False) -> Obj:
    c: Obj = {
        "name": draw(st.sampled_from(["trainer", "sidecar", "setup"])),
        "image": "registry.example.com/team/trainer:2026.12.01",
        "command": ["torchrun", "--nproc-per-node=8", "train.py"],
        "env": [{"name": f"VAR_{i}", "value": "x" * 40} for i in range(draw(st.integers(0, 8)))],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "resources": draw(RESOURCES),
    }
    if init and draw(st.booleans()):
        c["restartPolicy"] = "Always"  # a sidecar
    return c


@st.composite
def pod_sets(draw: st.DrawFn) -> Obj:
    spec: Obj = {
        "containers": draw(st.lists(containers(), min_size=1, max_size=3)),
        "restartPolicy": "Never",
        "volumes": [{"name": "data", "emptyDir": {}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}},
    }
    if draw(st.booleans()):
        spec["initContainers"] = draw(st.lists(containers(init=True), max_size=2))
    template: Any = {"metadata": {"labels": {"app": "train"}}, "spec": spec}
    template = draw(  # hand-written Workloads: templates Kueue's validation did not see
        st.sampled_from(
            [template, template, template, {}, {"spec": None}, {"spec": {"containers": "x"}}]
        )
    )
    ps: Obj = {
        "name": draw(st.sampled_from(["main", "workers", "driver", "node"])),
        "count": draw(st.one_of(st.integers(-1, 64), st.just("8"), st.none())),
        "template": template,
    }
    if draw(st.booleans()):
        ps["minCount"] = 1
    return ps


def owner_refs(draw: st.DrawFn) -> list[Obj]:
    kinds = st.sampled_from([("batch/v1", "Job"), ("jobset.x-k8s.io/v1alpha2", "JobSet")])
    refs = []
    for i in range(draw(st.integers(0, 2))):
        api, kind = draw(kinds)
        refs.append(
            {
                "apiVersion": api,
                "kind": kind,
                "name": f"train-{i}",
                "uid": f"uid-{i}",
                "controller": draw(st.sampled_from([True, False, None])),
                "blockOwnerDeletion": True,
            }
        )
    return refs


@st.composite
def workloads(draw: st.DrawFn) -> Obj:
    labels = {"team": "ml", "kueue.x-k8s.io/queue-name": "q"}
    if draw(st.booleans()):
        labels[JOB_UID_LABEL] = "uid-job"
    annotations = {"note": "y" * 100}
    if draw(st.booleans()):
        annotations[ELASTIC_ANNOTATION] = draw(st.sampled_from(["true", "false"]))
    meta: Obj = {
        "name": "job-train-1a2b3",
        "namespace": "team-a",
        "uid": "wl-uid",
        "resourceVersion": str(draw(st.integers(1, 10**6))),
        "generation": 1,
        "creationTimestamp": TIME,
        "labels": labels,
        "annotations": annotations,
        "ownerReferences": owner_refs(draw),
        "finalizers": ["kueue.x-k8s.io/resource-in-use"],
        "managedFields": [
            {"manager": "kueue", "operation": "Update", "fieldsV1": {"f:spec": {"f:podSets": {}}}}
        ],
    }
    if draw(st.booleans()):
        meta["deletionTimestamp"] = TIME
    spec: Obj = {
        "queueName": "q",
        "priority": 0,
        "podSets": draw(st.lists(pod_sets(), min_size=1, max_size=3)),
    }
    active = draw(st.sampled_from([True, False, None, "absent"]))
    if active != "absent":
        spec["active"] = active
    wl: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": spec,
    }
    if draw(st.booleans()):
        wl["status"] = status(draw, [p["name"] for p in spec["podSets"]])
    return wl


def status(draw: st.DrawFn, names: list[str]) -> Obj:
    kinds = ["QuotaReserved", "Admitted", "Finished", "Evicted", "PodsReady", "Requeued"]
    conditions = [
        {
            "type": t,
            "status": draw(st.sampled_from(["True", "False"])),
            "reason": "Because",
            "message": "m" * 80,
            "lastTransitionTime": TIME,
            "observedGeneration": 1,
        }
        for t in draw(st.lists(st.sampled_from(kinds), unique=True))
    ]
    checks = [
        {
            "name": name,
            "state": draw(st.sampled_from(["Pending", "Ready", "Retry", "Rejected"])),
            "message": "Launched 4×p4d.24xlarge",
            "lastTransitionTime": TIME,
            "podSetUpdates": [{"name": "main", "nodeSelector": {"atomic-gang.k8s.aws/pool": "p"}}],
            "requeueAfterSeconds": draw(st.sampled_from([None, 30])),
            "retryCount": draw(st.sampled_from([None, 0, 2])),
        }
        for name in draw(st.lists(st.sampled_from(["atomic-gang-check", "other"]), unique=True))
    ]
    out: Obj = {"conditions": conditions, "admissionChecks": checks}
    if draw(st.booleans()):
        out["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": name,
                    "flavors": {
                        "nvidia.com/gpu": draw(st.sampled_from(["gpu", "gang"])),
                        "cpu": "d",
                    },
                    "resourceUsage": {"nvidia.com/gpu": "32", "cpu": "384"},
                    "count": 4,
                    "topologyAssignment": {"levels": ["hostname"], "domains": []},
                }
                for name in names
            ],
        }
    out["reclaimablePods"] = [{"name": "main", "count": 1}]
    out["resourceRequests"] = [{"name": "main", "resources": {"cpu": "8"}}]
    return out


@settings(max_examples=300)
@given(workloads())
def test_the_cache_reads_a_workload_as_the_whole_one_reads(wl: Obj) -> None:
    assert view(slim(wl)) == view(wl)
    assert check_index(slim(wl)) == check_index(wl)
    assert slim(slim(wl)) == slim(wl)


@settings(max_examples=100)
@given(workloads(), workloads())
def test_an_update_enqueues_from_the_slim_copies_as_from_the_whole_ones(a: Obj, b: Obj) -> None:
    assert workload_read_changed(slim(a), slim(b)) == workload_read_changed(a, b)


@given(workloads())
def test_managed_fields_and_the_templates_beyond_resources_are_dropped(wl: Obj) -> None:
    kept = slim(wl)
    assert "managedFields" not in kept["metadata"]
    assert "finalizers" not in kept["metadata"]
    text = json.dumps(kept)
    for gone in ("registry.example.com", "VAR_", "volumeMounts", "podAntiAffinity", "topology"):
        assert gone not in text


def realistic() -> Obj:
    """A Job's Workload as Kueue writes it: one PodSet, an 8-GPU trainer, admitted."""
    trainer = {
        "name": "trainer",
        "image": "registry.example.com/team/trainer:2026.12.01",
        "command": ["torchrun", "--nproc-per-node=8", "train.py"],
        "env": [{"name": f"VAR_{i}", "value": "x" * 40} for i in range(20)],
        "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "90"}},
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-train-1a2b3",
            "namespace": "team-a",
            "uid": "wl-uid",
            "resourceVersion": "42",
            "labels": {JOB_UID_LABEL: "uid-job", "team": "ml"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "train",
                    "uid": "u",
                    "controller": True,
                }
            ],
            "managedFields": [{"manager": "kueue", "fieldsV1": {"f:spec": {"x" * 30: {}}}}] * 6,
        },
        "spec": {
            "queueName": "q",
            "podSets": [
                {"name": "main", "count": 4, "template": {"spec": {"containers": [trainer]}}}
            ],
        },
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "message": "m" * 120, "reason": "r"}
            ],
            "admissionChecks": [{"name": "atomic-gang-check", "state": "Pending", "message": ""}],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"nvidia.com/gpu": "gpu"}, "count": 4}
                ],
            },
        },
    }


def test_a_realistic_workload_keeps_a_fraction_of_its_size() -> None:
    wl = realistic()
    assert view(slim(wl)) == view(wl)
    assert view(slim(wl)).pod_set_requests == {"main": {"nvidia.com/gpu": 8}}
    assert len(json.dumps(slim(wl))) < len(json.dumps(wl)) / 3


def test_a_sidecar_still_adds_to_the_pod_and_an_init_container_does_not() -> None:
    wl = realistic()
    gpu = {"limits": {"nvidia.com/gpu": "8"}}
    pod = wl["spec"]["podSets"][0]["template"]["spec"]
    pod["initContainers"] = [
        {"name": "proxy", "image": "proxy", "restartPolicy": "Always", "resources": gpu},
        {"name": "setup", "image": "setup", "resources": {"limits": {"nvidia.com/gpu": "4"}}},
    ]
    assert view(slim(wl)).pod_set_requests == {"main": {"nvidia.com/gpu": 16}}
    assert view(slim(wl)) == view(wl)


@pytest.mark.parametrize(
    ("checks", "names", "carries"),
    [
        pytest.param([{"name": "atomic-gang-check"}], {"atomic-gang-check"}, True, id="ours"),
        pytest.param(
            [{"name": "prov"}, {"name": "atomic-gang-check"}],
            {"atomic-gang-check"},
            True,
            id="among",
        ),
        pytest.param([{"name": "prov"}], {"atomic-gang-check"}, False, id="another-controllers"),
        pytest.param([], {"atomic-gang-check"}, False, id="none-yet"),
        pytest.param([{"name": "atomic-gang-check"}], set(), False, id="no-check-of-ours"),
        pytest.param(["atomic-gang-check"], {"atomic-gang-check"}, False, id="malformed"),
    ],
)
def test_a_workload_is_ours_when_its_status_names_one_of_our_checks(
    checks: list[Any], names: set[str], carries: bool
) -> None:
    wl = {"metadata": {"name": "w"}, "status": {"admissionChecks": checks}}
    assert carries_check(wl, names) is carries
    assert not carries_check({"metadata": {"name": "w"}}, names)  # Kueue has not queued it

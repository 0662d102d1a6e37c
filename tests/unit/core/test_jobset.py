"""JobSet rules: gang-roles, count parity over the gang roles' pods, every replicatedJob's
template held to the Job template rules, one pod per node, and the UPDATE rules."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang import keys as k
from atomic_gang.job import review_job
from atomic_gang.jobset import review_jobset, review_jobset_update, roles
from tests.support.jobs import gang_job, gang_jobset, settings

S = settings()
KUEUE = S.kueue_username


def reasons(obj: dict[str, Any], **kw: Any) -> list[str]:
    found = review_jobset(obj, kw.pop("s", S), **kw)
    assert found is not None
    return [v.reason for v in found.violations]


def test_the_issues_jobset_is_valid_and_spreads_by_its_gpus() -> None:
    found = review_jobset(gang_jobset(), S)
    assert found is not None
    assert found.violations == ()
    assert found.warnings == ()  # each worker pod asks for 8 GPUs: one per node


def test_without_gang_roles_every_replicated_job_is_the_gang() -> None:
    assert reasons(gang_jobset(count=5, gang_roles=None)) == []
    found = review_jobset(gang_jobset(count=4, gang_roles=None), S)
    assert found is not None
    (v,) = found.violations
    assert (v.reason, v.key, v.value) == ("CountMismatch", k.COUNT, "4")
    assert "driver: 1 replicas × 1 = 1 pods; workers: 2 replicas × 2 = 4 pods" in v.message
    assert v.message.endswith(": 5")


def test_a_count_that_is_not_the_gang_roles_pods_names_each_role() -> None:
    found = review_jobset(gang_jobset(count=3), S)
    assert found is not None
    (v,) = found.violations
    assert v.reason == "CountMismatch"
    assert "workers: 2 replicas × 2 = 4 pods" in v.message
    assert "driver" not in v.message


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (
            "workerz",
            "names no replicatedJob: 'workerz' (the JobSet's replicatedJobs: driver, workers)",
        ),
        ("workers,workers", "repeats workers"),
        ("", "is empty"),
    ],
)
def test_gang_roles_must_name_replicated_jobs(raw: str, needle: str) -> None:
    found = review_jobset(gang_jobset(gang_roles=raw), S)
    assert found is not None
    assert [v.reason for v in found.violations] == ["InvalidGangRoles"]
    assert needle in found.violations[0].message


def test_gang_roles_on_a_job_is_refused() -> None:
    found = review_job(gang_job(annotations={k.GANG_ROLES: "workers"}), S)
    assert found is not None
    assert [v.reason for v in found.violations] == ["InvalidGangRoles"]
    assert "applies to JobSets and TrainJobs only" in found.violations[0].message


def test_every_job_rule_applies_to_the_jobset_metadata() -> None:
    bad = gang_jobset(annotations={k.INSTANCE_TYPE: "x9.nope", k.MAX_LIFETIME: "forever"})
    assert {"InstanceTypeNotAllowed", "InvalidDuration"} <= set(reasons(bad))
    unqueued = gang_jobset()
    del unqueued["metadata"]["labels"][k.QUEUE_NAME_LABEL]
    assert reasons(unqueued) == ["NotQueued"]
    elastic = gang_jobset()
    elastic["metadata"]["annotations"][k.ELASTIC_JOB] = "true"
    assert reasons(elastic) == ["ElasticGang"]
    reserved = settings(poolNamespaces=[{"names": "pretrain-*", "namespaces": ["team-a"]}])
    assert reasons(gang_jobset(), s=reserved, namespace="team-b") == ["PoolReserved"]


def test_a_replicated_jobs_template_may_not_reach_for_gang_nodes() -> None:
    js = gang_jobset()
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["nodeSelector"] = {k.POOL: "someone-elses"}
    found = review_jobset(js, S)
    assert found is not None
    (v,) = found.violations
    assert v.reason == "ReservedSelectorKey"
    assert v.field.startswith("spec.replicatedJobs[0].template.spec.template.spec.nodeSelector")
    plain = gang_jobset()
    plain["metadata"]["labels"], plain["metadata"]["annotations"] = {}, {}
    plain["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"] = pod
    found = review_jobset(plain, S)  # not a gang, but it reaches for gang nodes
    assert found is not None
    assert [v.reason for v in found.violations] == ["ReservedSelectorKey"]
    untouched = gang_jobset()
    untouched["metadata"]["labels"], untouched["metadata"]["annotations"] = {}, {}
    assert review_jobset(untouched, S) is None


def test_request_less_gang_pods_are_warned_and_an_anti_affinity_on_the_jobset_clears_it() -> None:
    js = gang_jobset(roles=(("workers", 2, 2, False),), gang_roles=None)
    found = review_jobset(js, S)
    assert found is not None
    assert found.violations == ()
    (warning,) = found.warnings
    assert "the 4 gang pods may share nodes" in warning
    assert "jobset.sigs.k8s.io/jobset-name: allreduce-jobset" in warning
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {
                        "matchLabels": {"jobset.sigs.k8s.io/jobset-name": "allreduce-jobset"}
                    },
                }
            ]
        }
    }
    spread = review_jobset(js, S)
    assert spread is not None
    assert spread.warnings == ()
    strict = settings(requireOnePodPerNode=True)
    denied = review_jobset(
        gang_jobset(roles=(("w", 1, 2, False),), gang_roles=None, count=2), strict
    )
    assert denied is not None
    assert [v.reason for v in denied.violations] == ["PodsNotSpread"]


def test_updates_keep_the_gang_keys_and_let_only_kueue_pin_the_templates() -> None:
    old = gang_jobset()
    new = gang_jobset(annotations={k.COUNT: "5"})
    found = review_jobset_update(old, new, S, user="alice")
    assert found is not None
    assert "ImmutableGangField" in [v.reason for v in found.violations]
    pinned = gang_jobset()
    pod = pinned["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod["nodeSelector"] = {k.POOL: "pretrain-p4d", k.GROUP: "pretrain-p4d-g7"}
    by_kueue = review_jobset_update(old, pinned, S, user=KUEUE)
    assert by_kueue is not None
    assert by_kueue.violations == ()
    by_alice = review_jobset_update(old, pinned, S, user="alice")
    assert by_alice is not None
    assert {v.reason for v in by_alice.violations} == {"ReservedSelectorKey"}


@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)),
        min_size=1,
        max_size=5,
    )
)
def test_the_count_is_replicas_times_min_of_parallelism_and_completions(
    shape: list[tuple[int, int, int]],
) -> None:
    js = gang_jobset(roles=tuple((f"r{i}", r, p, True) for i, (r, p, _) in enumerate(shape)))
    for rj, (_, _, completions) in zip(js["spec"]["replicatedJobs"], shape, strict=True):
        rj["template"]["spec"]["completions"] = completions
    found = roles(js)
    assert [r.pods for r in found] == [r * min(p, c) for r, p, c in shape]
    total = sum(r.pods for r in found)
    js["metadata"]["annotations"][k.COUNT] = str(total)
    del js["metadata"]["annotations"][k.GANG_ROLES]
    verdict = [v.reason for v in (review_jobset(js, S) or pytest.fail("no verdict")).violations]
    if 1 <= total <= S.limits.max_gang_size:
        assert verdict == []
    else:
        assert "CountMismatch" not in verdict

"""A gang's N is fixed: a Job that asks Kueue for elasticity (Workload slices, on by
default from Kueue v0.18) is denied on create and on update, naming the annotation."""

from __future__ import annotations

import pytest

from atomic_gang import GangValidationError, review_job_update, validate_job
from atomic_gang import keys as k
from tests.support.jobs import gang_job, settings

S = settings()


@pytest.mark.parametrize("value", ["true", "True", "yes", ""])
def test_an_elastic_gang_job_is_denied_naming_the_annotation_and_why(value: str) -> None:
    with pytest.raises(GangValidationError) as info:
        validate_job(gang_job(annotations={k.ELASTIC_JOB: value}), S)
    (v,) = info.value.violations
    assert (v.key, v.reason, v.value) == (k.ELASTIC_JOB, "ElasticGang", value)
    assert "cannot grow or shrink" in v.message
    assert v.field == f"metadata.annotations[{k.ELASTIC_JOB}]"
    assert "remove the" in v.hint


def test_elastic_false_is_no_elasticity_and_passes() -> None:
    assert validate_job(gang_job(annotations={k.ELASTIC_JOB: "false"}), S) is not None


def test_a_plain_elastic_job_is_not_ours_to_judge() -> None:
    plain = gang_job(labels={k.POOL: None}, annotations=dict.fromkeys(k.ANNOTATION_KEYS))
    plain["metadata"]["annotations"][k.ELASTIC_JOB] = "true"
    assert validate_job(plain, S) is None


def test_adding_the_annotation_on_update_is_denied() -> None:
    old = gang_job()
    new = gang_job(annotations={k.ELASTIC_JOB: "true"})
    found = review_job_update(old, new, S, user="alice")
    assert found is not None
    assert [v.reason for v in found.violations] == ["ElasticGang"]

"""GangSpec shape equality, hashing and UPDATE immutability."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import GangSpec, Violation, review_job_update, validate_job
from atomic_gang import keys as k
from tests.support.jobs import ROLE, gang_job, settings

S = settings()


def _spec(**annotations: str) -> GangSpec:
    mapped = {getattr(k, name.upper()): value for name, value in annotations.items()}
    spec = validate_job(gang_job(annotations=dict(mapped)), S)
    assert spec is not None
    return spec


def test_keep_warm_and_reservation_do_not_change_shape() -> None:
    a = _spec()
    b = _spec(keep_warm_ttl="1h", capacity_reservation_id="cr-0123456789abcdef0")
    assert a.shape_equals(b)
    assert a.shape_hash() == b.shape_hash()


@pytest.mark.parametrize(
    ("field", "value", "name"),
    [
        ("instance_type", "p5.48xlarge", "instanceType"),
        ("mode", "fleet", "mode"),
        ("availability_zones", "us-east-1b", "availabilityZones"),
        ("max_lifetime", "7h", "maxLifetime"),
        ("ami_id", "ami-0123456789abcdef0", "amiId"),
        ("ami_variant", "standard", "amiVariant"),
    ],
)
def test_shape_fields_differ(field: str, value: str, name: str) -> None:
    a, b = _spec(), _spec(**{field: value})
    assert not a.shape_equals(b)
    assert a.shape_diff(b) == [name]
    assert a.shape_hash() != b.shape_hash()


OTHER_ROLE = "arn:aws:iam::123456789012:role/other-gang-node-role"


def _pair(
    settings_overrides: dict[str, object], a: dict[str, str | None], b: dict[str, str | None]
) -> tuple[GangSpec, GangSpec]:
    s = settings(**settings_overrides)
    left, right = validate_job(gang_job(annotations=a), s), validate_job(gang_job(annotations=b), s)
    assert left is not None
    assert right is not None
    return left, right


@pytest.mark.parametrize(
    ("settings_overrides", "a", "b", "name"),
    [
        (
            {"allowedNodeRoleArns": [ROLE, OTHER_ROLE]},
            {},
            {k.NODE_ROLE_ARN: OTHER_ROLE},
            "nodeRoleArn",
        ),
        (
            {},
            {k.AVAILABILITY_ZONES: None, k.SUBNETS: "subnet-0123456789abcdef0"},
            {k.AVAILABILITY_ZONES: None, k.SUBNETS: "subnet-0fedcba9876543210"},
            "subnets",
        ),
        (
            {"defaults": {"nodeRoleArn": ROLE}},  # no cluster region: the annotation decides
            {},
            {k.REGION: "us-west-2", k.AVAILABILITY_ZONES: "us-west-2a"},
            "region",
        ),
    ],
)
def test_role_subnets_and_region_take_part_in_the_shape(
    settings_overrides: dict[str, object],
    a: dict[str, str | None],
    b: dict[str, str | None],
    name: str,
) -> None:
    left, right = _pair(settings_overrides, a, b)
    assert not left.shape_equals(right)
    assert name in left.shape_diff(right)
    assert left.shape_hash() != right.shape_hash()


def test_count_changes_shape() -> None:
    a = validate_job(gang_job(count=4), S)
    b = validate_job(gang_job(count=8), S)
    assert a is not None
    assert b is not None
    assert a.shape_diff(b) == ["count"]


def test_spec_is_frozen() -> None:
    spec = _spec()
    with pytest.raises(ValueError, match="frozen"):
        spec.count = 3  # type: ignore[misc]


def reviewed_update(old: dict[str, Any], new: dict[str, Any]) -> list[Violation]:
    """The webhook's UPDATE verdict, for a user other than Kueue."""
    findings = review_job_update(old, new, S, user="alice")
    return [] if findings is None else list(findings.violations)


def test_update_rejects_any_gang_change() -> None:
    old = gang_job()
    assert reviewed_update(old, gang_job()) == []
    resized = {"parallelism": 8, "completions": 8}  # count parity holds: only immutability
    changed = reviewed_update(
        old, gang_job(annotations={k.COUNT: "8"}, labels={k.POOL: "x"}, spec=resized)
    )
    assert [v.reason for v in changed] == ["ImmutableGangField", "ImmutableGangField"]
    assert {v.key for v in changed} == {k.COUNT, k.POOL}
    removed = reviewed_update(old, gang_job(annotations={k.MODE: None}))
    assert [v.key for v in removed] == [k.MODE]


def test_update_ignores_other_metadata() -> None:
    new = gang_job(labels={"team": "ml"}, annotations={"note": "x"}, spec={"suspend": False})
    assert reviewed_update(gang_job(), new) == []

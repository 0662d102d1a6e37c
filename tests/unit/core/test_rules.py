"""Table-driven: one positive and one negative case for every rule."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import GangSpec, GangValidationError, GoDuration, validate_job
from atomic_gang import keys as k
from tests.support.jobs import OTHER_ROLE, ROLE, gang_job, settings

S = settings()


def _reasons(job: dict[str, Any], s: Any = S) -> set[str]:
    try:
        validate_job(job, s)
    except GangValidationError as err:
        return set(err.reasons)
    return set()


VALID = [
    pytest.param({}, {}, id="sample-job"),
    pytest.param({k.POOL: "a" * 63}, {}, id="pool-63-chars"),
    pytest.param({}, {k.INSTANCE_TYPE: "p5.48xlarge"}, id="instance-type-glob"),
    pytest.param({}, {k.MODE: "fleet", k.AVAILABILITY_ZONES: "us-east-1a,us-east-1b"}, id="fleet"),
    pytest.param({}, {k.REGION: None}, id="region-default"),
    pytest.param({}, {k.AVAILABILITY_ZONES: "us-east-1a, us-east-1-bos-1a"}, id="local-zone"),
    pytest.param(
        {}, {k.AVAILABILITY_ZONES: None, k.SUBNETS: "subnet-0123456789abcdef0"}, id="subnets"
    ),
    pytest.param({}, {k.NODE_ROLE_ARN: None}, id="role-default"),
    pytest.param({}, {k.KEEP_WARM_TTL: "0s"}, id="keep-warm-zero"),
    pytest.param({}, {k.KEEP_WARM_TTL: "24h"}, id="keep-warm-at-limit"),
    pytest.param({}, {k.MAX_LIFETIME: "1h30m"}, id="max-lifetime"),
    pytest.param({}, {k.AMI_VARIANT: "standard"}, id="ami-variant"),
    pytest.param({}, {k.AMI_ID: "ami-0123456789abcdef0"}, id="ami-id"),
    pytest.param({}, {k.CAPACITY_RESERVATION_ID: "cr-0123456789abcdef0"}, id="capacity-res"),
]


@pytest.mark.parametrize(("labels", "annotations"), VALID)
def test_valid_jobs_resolve(labels: dict[str, Any], annotations: dict[str, Any]) -> None:
    spec = validate_job(gang_job(labels=labels, annotations=annotations), S)
    assert isinstance(spec, GangSpec)
    assert spec.count == 4


INVALID = [
    pytest.param({k.POOL: "Pretrain"}, {}, None, "InvalidPoolName", id="pool-uppercase"),
    pytest.param({k.POOL: "a" * 64}, {}, None, "InvalidPoolName", id="pool-too-long"),
    pytest.param({k.POOL: None}, {}, None, "IncompleteSet", id="annotations-without-pool"),
    pytest.param({}, {k.COUNT: None}, None, "IncompleteSet", id="pool-without-count"),
    pytest.param({}, {k.COUNT: "0"}, None, "InvalidCount", id="count-zero"),
    pytest.param({}, {k.COUNT: "four"}, None, "InvalidCount", id="count-word"),
    pytest.param({}, {k.COUNT: "65"}, {"parallelism": 65}, "CountExceedsLimit", id="count-max"),
    pytest.param({}, {}, {"parallelism": 3}, "CountMismatch", id="parallelism"),
    pytest.param({}, {}, {"completions": 8}, "CountMismatch", id="completions"),
    pytest.param({}, {k.INSTANCE_TYPE: None}, None, "MissingRequired", id="no-instance-type"),
    pytest.param({}, {k.INSTANCE_TYPE: "p4d"}, None, "InvalidInstanceType", id="type-syntax"),
    pytest.param(
        {}, {k.INSTANCE_TYPE: "c5.large"}, None, "InstanceTypeNotAllowed", id="type-allowlist"
    ),
    pytest.param({}, {k.MODE: "spot"}, None, "InvalidMode", id="mode"),
    pytest.param({}, {k.REGION: "eu-west-1"}, None, "RegionMismatch", id="region"),
    pytest.param(
        {},
        {k.AVAILABILITY_ZONES: "eu-west-1a"},
        None,
        "InvalidAvailabilityZone",
        id="zone-other-region",
    ),
    pytest.param(
        {},
        {k.AVAILABILITY_ZONES: "us-east-1a,,"},
        None,
        "InvalidAvailabilityZone",
        id="zone-empty-item",
    ),
    pytest.param(
        {},
        {k.SUBNETS: "subnet-0123456789abcdef0"},
        None,
        "ZonesAndSubnetsExclusive",
        id="zones-and-subnets",
    ),
    pytest.param(
        {},
        {k.AVAILABILITY_ZONES: None, k.SUBNETS: "sn-1"},
        None,
        "InvalidSubnet",
        id="subnet-syntax",
    ),
    pytest.param(
        {}, {k.NODE_ROLE_ARN: "eks-gang-node-role"}, None, "InvalidNodeRoleArn", id="role-syntax"
    ),
    pytest.param(
        {}, {k.NODE_ROLE_ARN: OTHER_ROLE}, None, "NodeRoleNotAllowed", id="role-allowlist"
    ),
    pytest.param({}, {k.KEEP_WARM_TTL: "15 minutes"}, None, "InvalidDuration", id="ttl-syntax"),
    pytest.param({}, {k.KEEP_WARM_TTL: "25h"}, None, "KeepWarmTTLOutOfRange", id="ttl-max"),
    pytest.param({}, {k.KEEP_WARM_TTL: "-1m"}, None, "KeepWarmTTLOutOfRange", id="ttl-negative"),
    pytest.param({}, {k.MAX_LIFETIME: "0s"}, None, "InvalidMaxLifetime", id="lifetime-zero"),
    pytest.param({}, {k.MAX_LIFETIME: "6 hours"}, None, "InvalidDuration", id="lifetime-syntax"),
    pytest.param({}, {k.AMI_VARIANT: "gpu"}, None, "InvalidAmiVariant", id="ami-variant"),
    pytest.param({}, {k.AMI_ID: "ami-xyz"}, None, "InvalidAmiId", id="ami-id"),
    pytest.param(
        {},
        {k.CAPACITY_RESERVATION_ID: "odcr-1"},
        None,
        "InvalidCapacityReservationId",
        id="capacity-reservation",
    ),
    pytest.param({}, {k.PREFIX + "cout": "4"}, None, "UnknownKey", id="unknown-annotation"),
    pytest.param({k.PREFIX + "poool": "x"}, {}, None, "UnknownKey", id="unknown-label"),
    pytest.param({}, {k.POOL: "x"}, None, "WrongPlace", id="pool-as-annotation"),
    pytest.param({k.COUNT: "4"}, {}, None, "WrongPlace", id="count-as-label"),
    pytest.param(
        {},
        {},
        {"template": {"spec": {"nodeSelector": {k.GROUP: "g"}}}},
        "ReservedSelectorKey",
        id="reserved-selector",
    ),
]


@pytest.mark.parametrize(("labels", "annotations", "spec", "reason"), INVALID)
def test_invalid_jobs_name_the_rule(
    labels: dict[str, Any], annotations: dict[str, Any], spec: dict[str, Any] | None, reason: str
) -> None:
    job = gang_job(labels=labels, annotations=annotations, spec=spec)
    assert reason in _reasons(job)


def test_role_required_without_default() -> None:
    s = settings(defaults={"region": "us-east-1"}, allowedNodeRoleArns=[ROLE])
    assert "MissingRequired" in _reasons(gang_job(annotations={k.NODE_ROLE_ARN: None}), s)
    assert _reasons(gang_job(), s) == set()


def test_every_violation_is_reported_at_once() -> None:
    job = gang_job(
        annotations={k.MODE: "spot", k.REGION: "eu-west-1", k.AMI_ID: "x", k.PREFIX + "cout": "1"},
        spec={"parallelism": 2},
    )
    with pytest.raises(GangValidationError) as info:
        validate_job(job, S)
    assert set(info.value.reasons) == {
        "InvalidMode",
        "RegionMismatch",
        "InvalidAmiId",
        "UnknownKey",
        "CountMismatch",
    }
    fields = {v.field for v in info.value.violations}
    assert f"metadata.annotations[{k.MODE}]" in fields


def test_unknown_key_suggests_the_closest() -> None:
    with pytest.raises(GangValidationError) as info:
        validate_job(gang_job(annotations={k.PREFIX + "instance-typ": "x"}), S)
    hints = [v.hint for v in info.value.violations if v.reason == "UnknownKey"]
    assert hints == [f"did you mean {k.INSTANCE_TYPE}?"]


def test_plain_job_is_not_a_gang() -> None:
    job = gang_job(labels={k.POOL: None}, annotations=dict.fromkeys(k.ANNOTATION_KEYS))
    assert validate_job(job, S) is None


def test_defaults_are_resolved() -> None:
    job = gang_job(
        annotations={
            key: None for key in k.ANNOTATION_KEYS if key not in (k.COUNT, k.INSTANCE_TYPE)
        }
    )
    spec = validate_job(job, S)
    assert spec is not None
    assert (spec.mode, spec.region, spec.node_role_arn) == ("runinstances", "us-east-1", ROLE)
    assert spec.keep_warm_ttl == GoDuration.of(minutes=10)
    assert spec.max_lifetime == GoDuration.of(hours=4)
    assert spec.ami_variant == "nvidia"


@pytest.mark.parametrize(
    ("itype", "variant"),
    [
        ("p4d.24xlarge", "nvidia"),
        ("g5.xlarge", "nvidia"),
        ("trn1.32xlarge", "neuron"),
        ("inf2.xlarge", "neuron"),
        ("m5.large", "standard"),
    ],
)
def test_ami_variant_derived_from_family(itype: str, variant: str) -> None:
    s = settings(allowedInstanceTypes=[])
    spec = validate_job(gang_job(annotations={k.INSTANCE_TYPE: itype}), s)
    assert spec is not None
    assert spec.ami_variant == variant


def test_parity_defaults_parallelism_to_one() -> None:
    job = gang_job(count=1)
    del job["spec"]["parallelism"]
    del job["spec"]["completions"]
    assert validate_job(job, S) is not None

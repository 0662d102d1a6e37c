"""Issue 13 settings: allowlists of tenant choices, the lifetime cap, the queue rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from atomic_gang import GangValidationError, GoDuration, load_settings, validate_job
from atomic_gang import keys as k
from atomic_gang.settings import SettingsError
from tests.support.jobs import gang_job, settings


def test_defaults_allow_any_choice_but_cap_the_lifetime() -> None:
    s = load_settings(None)
    assert (s.allowed_ami_ids, s.allowed_subnets, s.allowed_capacity_reservation_ids) == (
        (),
        (),
        (),
    )
    assert s.limits.max_lifetime == GoDuration.of(hours=168)
    assert s.manage_jobs_without_queue_name is False
    assert s.require_one_pod_per_node is False
    assert s.kueue_username == "system:serviceaccount:kueue-system:kueue-controller-manager"
    assert s.job_set_username == "system:serviceaccount:jobset-system:jobset-controller-manager"
    assert s.trainer_username == (
        "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"
    )


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        pytest.param("allowedAmiIds: [ami-12]\n", "allowedAmiIds[0] 'ami-12'", id="short-ami"),
        pytest.param("allowedAmiIds: ['ami-*0']\n", "allowedAmiIds[0]", id="inner-star"),
        pytest.param("allowedAmiIds: ['AMI-*']\n", "allowedAmiIds[0]", id="upper"),
        pytest.param("allowedSubnets: [sg-0123abcd]\n", "allowedSubnets[0]", id="not-subnet"),
        pytest.param(
            "allowedCapacityReservationIds: ['cr-\u0661*']\n",
            "allowedCapacityReservationIds[0]",
            id="unicode-digit",
        ),
        pytest.param(
            "defaults: {maxLifetime: 200h}\n", "defaults.maxLifetime must be > 0 and <=", id="cap"
        ),
        pytest.param("kueueUsername: ''\n", "kueueUsername", id="empty-kueue-user"),
        pytest.param("jobSetUsername: ''\n", "jobSetUsername", id="empty-jobset-user"),
        pytest.param("trainerUsername: ''\n", "trainerUsername", id="empty-trainer-user"),
    ],
)
def test_bad_tenant_settings_name_the_field(tmp_path: Path, yaml_text: str, needle: str) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(yaml_text)
    with pytest.raises(SettingsError) as info:
        load_settings(path)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    "entries", [["ami-0123456789abcdef0"], ["ami-0123*"], ["ami-*"], ["*"], ["ami-01234567"]]
)
def test_ami_allowlist_entries(entries: list[str]) -> None:
    assert settings(allowedAmiIds=entries).allowed_ami_ids == tuple(entries)


def _reasons(job: dict[str, object], **overrides: object) -> set[str]:
    try:
        validate_job(job, settings(**overrides))
    except GangValidationError as err:
        return set(err.reasons)
    return set()


def test_manage_jobs_without_queue_name_turns_the_queue_rule_off() -> None:
    job = gang_job(labels={k.QUEUE_NAME_LABEL: None})
    assert _reasons(job) == {"NotQueued"}
    assert _reasons(job, manageJobsWithoutQueueName=True) == set()


def test_lifetime_at_the_cap_is_allowed_and_above_it_is_not() -> None:
    limits = {"maxGangSize": 64, "maxKeepWarmTTL": "24h", "maxLifetime": "6h"}
    assert _reasons(gang_job(annotations={k.MAX_LIFETIME: "6h"}), limits=limits) == set()
    over = gang_job(annotations={k.MAX_LIFETIME: "6h0m1s"})
    assert _reasons(over, limits=limits) == {"MaxLifetimeExceedsLimit"}


def test_subnet_allowlist_names_each_subnet_outside_it() -> None:
    job = gang_job(
        annotations={
            k.AVAILABILITY_ZONES: None,
            k.SUBNETS: "subnet-0123456789abcdef0,subnet-0fffffffffffffff0",
        }
    )
    with pytest.raises(GangValidationError) as info:
        validate_job(job, settings(allowedSubnets=["subnet-0123*"]))
    (v,) = info.value.violations
    assert v.reason == "SubnetNotAllowed"
    assert v.message.startswith("subnet-0fffffffffffffff0 not in allowedSubnets")


@pytest.mark.parametrize(
    ("annotations", "setting"),
    [
        pytest.param({k.AMI_ID: "ami-0fffffffffffffff0"}, "allowedAmiIds", id="ami"),
        pytest.param(
            {k.SUBNETS: "subnet-0fffffffffffffff0", k.AVAILABILITY_ZONES: None},
            "allowedSubnets",
            id="subnet",
        ),
        pytest.param(
            {k.CAPACITY_RESERVATION_ID: "cr-0fffffffffffffff0"},
            "allowedCapacityReservationIds",
            id="reservation",
        ),
        pytest.param(
            {k.NODE_ROLE_ARN: "arn:aws:iam::999999999999:role/mine"},
            "allowedNodeRoleArns",
            id="node-role",
        ),
    ],
)
def test_an_allowlist_denial_names_the_setting_never_its_values(
    annotations: dict[str, str | None], setting: str
) -> None:
    """Allowlists name other teams' images, subnets, reservations and the account's roles."""
    secrets = {
        "allowedAmiIds": ["ami-0123456789abcdef0"],
        "allowedSubnets": ["subnet-0123456789abcdef0"],
        "allowedCapacityReservationIds": ["cr-0123456789abcdef0"],
        "allowedNodeRoleArns": ["arn:aws:iam::123456789012:role/team-a-secret-role"],
    }
    job = gang_job(annotations=annotations)
    if k.NODE_ROLE_ARN not in annotations:
        job["metadata"]["annotations"][k.NODE_ROLE_ARN] = secrets["allowedNodeRoleArns"][0]
    with pytest.raises(GangValidationError) as info:
        validate_job(
            job,
            settings(
                **secrets,
                defaults={"region": "us-east-1", "nodeRoleArn": secrets["allowedNodeRoleArns"][0]},
            ),
        )
    text = str(info.value)
    assert f"the cluster admin's ({setting})" in text, text
    assert "0123456789abcdef0" not in text  # no allowlisted id
    assert "team-a-secret-role" not in text  # no allowlisted role

"""The settings file's names are a contract with the chart and every user's file.

The model's fields are snake_case in code and camelCase by alias in the file, the
chart and the environment. These tests pin the names a file may use to exactly the
set it could use before the fields were renamed, and the environment variable names
to their old spelling, so that the rename changes nothing a user writes.
"""

from __future__ import annotations

import os
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from atomic_gang import GoDuration, load_settings
from atomic_gang.settings import GangSettings, SettingsError

# Every key a settings file could hold (dotted: nested), copied from the model as it
# stood before its fields were renamed to snake_case. Never derive this list from the
# model: it is what the model must still accept.
FILE_KEYS = frozenset(
    (
        "clusterName",
        "controllerName",
        "integrationMode",
        "defaults",
        "defaults.region",
        "defaults.nodeRoleArn",
        "defaults.mode",
        "defaults.keepWarmTTL",
        "defaults.maxLifetime",
        "limits",
        "limits.maxGangSize",
        "limits.maxKeepWarmTTL",
        "limits.maxLifetime",
        "allowedInstanceTypes",
        "allowedNodeRoleArns",
        "allowedAmiIds",
        "allowedSubnets",
        "allowedCapacityReservationIds",
        "allowedPlacementGroups",
        "namespaceAllowlists",
        "namespaceAllowlists.namespaces",
        "namespaceAllowlists.allowedAmiIds",
        "namespaceAllowlists.allowedSubnets",
        "namespaceAllowlists.allowedCapacityReservationIds",
        "namespaceAllowlists.allowedNodeRoleArns",
        "namespaceAllowlists.allowedPlacementGroups",
        "poolNamespaces",
        "poolNamespaces.names",
        "poolNamespaces.namespaces",
        "manageJobsWithoutQueueName",
        "requireOnePodPerNode",
        "kueueUsername",
        "jobSetUsername",
        "trainerUsername",
        "reapIntervalSeconds",
        "joinDeadlineSeconds",
        "acquireAttemptsBeforeRetry",
        "maxConcurrentPoolReconciles",
        "healthGraceSeconds",
        "ownerWaitSeconds",
        "acquireRetry",
        "acquireRetry.backoffBaseSeconds",
        "acquireRetry.backoffMaxSeconds",
        "leaderElection",
        "leaderElection.enabled",
        "leaderElection.leaseName",
        "leaderElection.namespace",
        "leaderElection.leaseDurationSeconds",
        "leaderElection.renewDeadlineSeconds",
        "leaderElection.retryPeriodSeconds",
        "iam",
        "iam.selfManageInstanceProfile",
        "ec2Api",
        "ec2Api.runInstancesBurst",
        "ec2Api.runInstancesPerSecond",
        "ec2Api.runInstancesInstanceBurst",
        "ec2Api.runInstancesInstancesPerSecond",
        "ec2Api.mutatingBurst",
        "ec2Api.mutatingPerSecond",
        "ec2Api.nonMutatingBurst",
        "ec2Api.nonMutatingPerSecond",
        "ec2Api.batchIdleSeconds",
        "ec2Api.batchMaxSeconds",
        "ec2Api.shortCellSeconds",
        "ec2Api.shortCellOwedAfterSeconds",
        "ec2Api.describeReuseSeconds",
        "capacityBlock",
        "capacityBlock.drainLeadSeconds",
        "capacityBlock.minRemainingSeconds",
        "capacityBlock.warningLeadSeconds",
        "nodeHealth",
        "nodeHealth.conditions",
        "nodeHealth.conditions.type",
        "nodeHealth.conditions.status",
        "nodeHealth.conditions.graceSeconds",
        "repair",
        "repair.enabled",
        "repair.deadlineSeconds",
        "repair.maxNodes",
        "repair.maxRepairs",
    )
)


def _file_keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    """The keys the model reads from a file: each field's alias, sections walked."""
    out: set[str] = set()
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        out.add(key)
        for sub in (field.annotation, *typing.get_args(field.annotation)):
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                out |= _file_keys(sub, key + ".")
    return out


def test_the_file_accepts_exactly_the_keys_it_always_did() -> None:
    assert _file_keys(GangSettings) == FILE_KEYS


def test_every_file_key_loads_and_dumps_back_under_its_file_name(tmp_path: Path) -> None:
    """A file naming every section and a field of each: what is dumped by alias is the
    file's form again (the chart and ``atomic-gang`` print that form)."""
    path = tmp_path / "settings.yaml"
    path.write_text(FULL_FILE)
    s = load_settings(path)

    dumped = s.model_dump(mode="json", by_alias=True)
    assert _dotted(dumped) <= FILE_KEYS
    assert {k for k in FILE_KEYS if "." not in k} == set(dumped)
    assert load_settings(None, **dumped) == s
    assert s.defaults.keep_warm_ttl == GoDuration.of(minutes=5)
    assert s.limits.max_keep_warm_ttl == GoDuration.of(hours=2)
    assert s.ec2_api.short_cell_owed_after_seconds == 100
    assert s.job_set_username == "system:serviceaccount:b:jobset"
    assert s.allowed_ami_ids == ("ami-0123*",)


FULL_FILE = """\
clusterName: c1
defaults: {region: us-east-1, keepWarmTTL: 5m}
limits: {maxKeepWarmTTL: 2h}
allowedAmiIds: ["ami-0123*"]
jobSetUsername: "system:serviceaccount:b:jobset"
ec2Api: {shortCellOwedAfterSeconds: 100}
capacityBlock: {drainLeadSeconds: 1900}
leaderElection: {leaseName: l}
iam: {selfManageInstanceProfile: true}
acquireRetry: {backoffMaxSeconds: 60}
namespaceAllowlists: [{namespaces: [a], allowedSubnets: ["subnet-1*"]}]
poolNamespaces: [{names: "t-*", namespaces: [a]}]
"""


def _dotted(data: dict[str, object], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for key, value in data.items():
        out.add(prefix + key)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                out |= _dotted(item, prefix + key + ".")
    return out


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("cluster_name: c\n", id="top-level"),
        pytest.param("limits: {max_gang_size: 3}\n", id="section"),
        pytest.param("defaults: {keep_warm_ttl: 5m}\n", id="explicit-alias"),
        pytest.param("namespaceAllowlists: [{namespaces: [a], allowed_subnets: [x]}]\n", id="list"),
    ],
)
def test_the_code_names_are_not_file_names(text: str, tmp_path: Path) -> None:
    """snake_case is the code's spelling only: in a file it is an unknown setting."""
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError, match="unknown setting"):
        load_settings(path)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        pytest.param("clusterNmae: x\n", "clusterNmae: unknown setting", id="typo"),
        pytest.param("limits: {maxGangSize: 0}\n", "  limits.maxGangSize: ", id="nested"),
        pytest.param("limits: {maxKeepWarmTTL: soon}\n", "  limits.maxKeepWarmTTL: ", id="ttl"),
        pytest.param("ec2Api: {batchIdleSeconds: -1}\n", "  ec2Api.batchIdleSeconds: ", id="ec2"),
        pytest.param("jobSetUsername: ''\n", "  jobSetUsername: ", id="username"),
        pytest.param(
            "namespaceAllowlists: [{allowedSubnets: [x]}]\n",
            "  namespaceAllowlists.0.namespaces: Field required",
            id="missing",
        ),
        pytest.param(
            "capacityBlock: {drainLeadSeconds: 60}\n", "  capacityBlock.drainLeadSeconds: ", id="cb"
        ),
    ],
)
def test_errors_name_the_file_names(text: str, needle: str, tmp_path: Path) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError) as err:
        load_settings(path)
    assert needle in str(err.value)


def test_require_names_the_file_names() -> None:
    with pytest.raises(SettingsError, match=r"required but empty: clusterName, defaults\.region"):
        load_settings(None).require("clusterName", "defaults.region")
    load_settings(None, clusterName="c", defaults={"region": "us-east-1"}).require(
        "clusterName", "defaults.region"
    )


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for key in [k for k in os.environ if k.upper().startswith("ATOMIC_GANG_")]:
        monkeypatch.delenv(key)
    return monkeypatch


def test_the_environment_names_are_unchanged(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    """ATOMIC_GANG_ and the file name upper-cased, ``__`` between levels, as always; they
    override the file."""
    path = tmp_path / "settings.yaml"
    path.write_text(FULL_FILE)
    clean_env.setenv("ATOMIC_GANG_CLUSTERNAME", "from-env")
    clean_env.setenv("ATOMIC_GANG_LIMITS__MAXGANGSIZE", "7")
    clean_env.setenv("ATOMIC_GANG_LIMITS__MAXKEEPWARMTTL", "3h")
    clean_env.setenv("ATOMIC_GANG_EC2API__SHORTCELLOWEDAFTERSECONDS", "5")
    clean_env.setenv("ATOMIC_GANG_JOBSETUSERNAME", "system:serviceaccount:e:jobset")
    clean_env.setenv("atomic_gang_maxconcurrentpoolreconciles", "11")  # any case

    s = load_settings(path)

    assert s.cluster_name == "from-env"
    assert s.limits.max_gang_size == 7
    assert s.limits.max_keep_warm_ttl == GoDuration.of(hours=3)
    assert s.ec2_api.short_cell_owed_after_seconds == 5
    assert s.job_set_username == "system:serviceaccount:e:jobset"
    assert s.max_concurrent_pool_reconciles == 11
    assert s.defaults.region == "us-east-1"  # the file's, where no variable says otherwise


@pytest.mark.parametrize(
    "name",
    ["ATOMIC_GANG_CLUSTER_NAME", "CLUSTERNAME", "CLUSTER_NAME"],
)
def test_no_new_environment_name_is_read(name: str, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(name, "from-env")
    assert load_settings(None).cluster_name == ""


def test_a_code_name_in_a_nested_variable_is_an_unknown_setting(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("ATOMIC_GANG_LIMITS__MAX_GANG_SIZE", "7")
    with pytest.raises(SettingsError, match=r"limits\.max_gang_size: unknown setting"):
        load_settings(None)


def test_a_list_variable_that_is_not_json_names_the_variable_its_value_and_the_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATOMIC_GANG_ALLOWEDINSTANCETYPES", "p5.*")
    with pytest.raises(SettingsError) as err:
        load_settings(None, clusterName="c")
    assert str(err.value) == (
        "environment: ATOMIC_GANG_ALLOWEDINSTANCETYPES='p5.*': allowedInstanceTypes is a "
        'list or a section, so its variable holds JSON (e.g. ["p5.*", "p4d.24xlarge"] or '
        '{"maxGangSize": 8})'
    )

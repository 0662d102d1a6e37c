"""The shared settings model: YAML with chart names, env overrides, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from atomic_gang import GoDuration, load_settings
from atomic_gang.settings import SettingsError, check_env_names
from tests.support.jobs import OTHER_ROLE, ROLE

ISSUE_EXAMPLE = """\
clusterName: my-eks-cluster
defaults: {region: us-east-1, nodeRoleArn: "arn:aws:iam::123456789012:role/eks-gang-node-role", \
keepWarmTTL: 10m}
limits: {maxGangSize: 64, maxKeepWarmTTL: 24h}
allowedInstanceTypes: ["p4d.24xlarge", "p5.*"]
"""


def test_issue_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(ISSUE_EXAMPLE)
    s = load_settings(path)
    assert s.cluster_name == "my-eks-cluster"
    assert s.defaults.keep_warm_ttl == GoDuration.of(minutes=10)
    assert s.limits.max_keep_warm_ttl == GoDuration.of(hours=24)
    assert s.allowed_roles == ("arn:aws:iam::123456789012:role/eks-gang-node-role",)
    assert s.controller_name == "atomic-gang.k8s.aws/ec2-atomic"
    assert (s.reap_interval_seconds, s.join_deadline_seconds) == (120, 600)
    assert (s.acquire_attempts_before_retry, s.max_concurrent_pool_reconciles) == (20, 5)
    assert s.defaults.mode == "runinstances"
    assert s.defaults.max_lifetime == GoDuration.of(hours=4)


def test_env_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(ISSUE_EXAMPLE)
    monkeypatch.setenv("ATOMIC_GANG_DEFAULTS__REGION", "eu-west-1")
    monkeypatch.setenv("ATOMIC_GANG_LIMITS__MAXGANGSIZE", "8")
    monkeypatch.setenv("ATOMIC_GANG_CONFIG", str(path))  # not a field: ignored
    s = load_settings(path)
    assert s.defaults.region == "eu-west-1"
    assert s.limits.max_gang_size == 8
    assert s.cluster_name == "my-eks-cluster"


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        pytest.param("clusterNmae: x\n", "clusterNmae: unknown setting", id="typo"),
        pytest.param("limits: {maxGangSize: 0}\n", "limits.maxGangSize", id="limit"),
        pytest.param("defaults: {keepWarmTTL: 10 minutes}\n", "defaults.keepWarmTTL", id="ttl"),
        pytest.param("defaults: {keepWarmTTL: 48h}\n", "maxKeepWarmTTL", id="ttl-over-limit"),
        pytest.param("defaults: {region: mars}\n", "defaults.region", id="region"),
        pytest.param("allowedInstanceTypes: ['p*.x']\n", "allowedInstanceTypes[0]", id="glob"),
        pytest.param("allowedNodeRoleArns: [role]\n", "allowedNodeRoleArns[0]", id="role"),
        pytest.param("defaults: {mode: spot}\n", "defaults.mode", id="mode"),
        pytest.param(
            f"defaults: {{nodeRoleArn: '{ROLE}'}}\nallowedNodeRoleArns: ['{OTHER_ROLE}']\n",
            f"defaults.nodeRoleArn {ROLE!r} is not in allowedNodeRoleArns",
            id="default-role-outside-allowlist",
        ),
        pytest.param("integrationMode: job\n", "integrationMode", id="integration-mode"),
        pytest.param(
            "leaderElection: {leaseDurationSeconds: 5, renewDeadlineSeconds: 10}\n",
            "leaderElection",
            id="lease-timing",
        ),
        pytest.param("clusterName: -dash-first\n", "EKS allows 1-100 characters", id="cluster"),
        pytest.param(f"clusterName: {'c' * 101}\n", "EKS allows 1-100 characters", id="long"),
        pytest.param("clusterName: my.cluster\n", "'my.cluster' is not a valid EKS", id="dot"),
        pytest.param("- a\n", "must hold a YAML mapping", id="not-a-mapping"),
        pytest.param("a: [\n", "cannot read settings file", id="bad-yaml"),
    ],
)
def test_invalid_settings_name_the_field(tmp_path: Path, yaml_text: str, needle: str) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(yaml_text)
    with pytest.raises(SettingsError) as info:
        load_settings(path)
    assert needle in str(info.value)


def test_require_names_missing_fields() -> None:
    with pytest.raises(SettingsError, match=r"clusterName, defaults\.region"):
        load_settings(None).require("clusterName", "defaults.region")


def test_missing_file_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read"):
        load_settings(tmp_path / "absent.yaml")


def test_unknown_server_env_variables_are_named_with_a_suggestion() -> None:
    env = {"ATOMIC_GANG_X_PORT": "1", "ATOMIC_GANG_X_PROT": "2", "OTHER": "3"}
    with pytest.raises(SettingsError) as info:
        check_env_names("ATOMIC_GANG_X_", ["port", "host"], env)
    text = str(info.value)
    assert "ATOMIC_GANG_X_PROT: unknown setting (did you mean ATOMIC_GANG_X_PORT?)" in text
    assert "ATOMIC_GANG_X_PORT:" not in text
    assert "OTHER" not in text
    check_env_names("ATOMIC_GANG_X_", ["port"], {"ATOMIC_GANG_X_PORT": "1"})  # known: fine


@pytest.mark.parametrize(
    ("allowed", "ok"),
    [
        pytest.param([], True, id="empty-allowlist-means-the-default"),
        pytest.param([OTHER_ROLE, ROLE], True, id="default-listed"),
        pytest.param([OTHER_ROLE], False, id="default-not-listed"),
    ],
)
def test_the_default_node_role_must_be_allowed(allowed: list[str], ok: bool) -> None:
    """A default role the controller may not pass would fail only at launch: refuse it
    at start-up, naming both settings and what to do."""
    data = {"defaults": {"nodeRoleArn": ROLE}, "allowedNodeRoleArns": allowed}
    if ok:
        assert load_settings(None, **data).allowed_roles == tuple(allowed or [ROLE])
        return
    with pytest.raises(SettingsError) as info:
        load_settings(None, **data)
    text = str(info.value)
    assert "defaults.nodeRoleArn" in text
    assert "allowedNodeRoleArns" in text
    assert OTHER_ROLE in text


@pytest.mark.parametrize("name", ["my_cluster", "c" * 100, "Prod-EU_1", "9"])
def test_every_cluster_name_eks_accepts_is_accepted(tmp_path: Path, name: str) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(f"clusterName: '{name}'\ndefaults: {{region: us-east-1}}\n")
    assert load_settings(path).cluster_name == name

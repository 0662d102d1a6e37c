"""The chart's ConfigMap is a settings file the services accept, and the schema mirrors the model.

Both services load ``settings.yaml`` from the ConfigMap with
``atomic_gang.settings.load_settings``, whose model forbids unknown keys, so a
chart value that reached the ConfigMap under the wrong name would stop them at
start-up. These tests load the rendered file exactly that way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from atomic_gang.durations import GoDuration
from atomic_gang.settings import GangSettings, load_settings
from tests.integration.chart.conftest import CUSTOM, POSITIVE
from tests.integration.chart.render import CHART, NAMESPACE, Rendered


def _settings(r: Rendered, tmp_path: Path) -> GangSettings:
    assert r.returncode == 0, r.stderr
    data = r.one("ConfigMap", "-settings")["data"]
    assert list(data) == ["settings.yaml"]
    path = tmp_path / "settings.yaml"
    path.write_text(data["settings.yaml"])
    return load_settings(path)


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("ATOMIC_GANG_")]:
        monkeypatch.delenv(key)


def test_default_values_load_as_the_model_defaults(default: Rendered, tmp_path: Path) -> None:
    s = _settings(default, tmp_path)

    assert s.cluster_name == "my-eks-cluster"
    assert s.defaults.region == "us-east-1"
    # Everything not set by the user is exactly the model's default...
    expected = GangSettings(
        clusterName="my-eks-cluster",
        defaults={"region": "us-east-1", "nodeRoleArn": s.defaults.node_role_arn},
        leaderElection={"namespace": NAMESPACE},
    )
    assert s == expected
    # ...except the Lease namespace, pinned to the release namespace (where the Role is).
    assert s.leader_election.namespace == NAMESPACE


def test_custom_values_arrive_unchanged(renders: dict[str, Rendered], tmp_path: Path) -> None:
    s = _settings(renders["custom"], tmp_path)

    assert s.cluster_name == "prod-eks"
    assert s.defaults.mode == "fleet"
    assert s.defaults.keep_warm_ttl == GoDuration.of(minutes=30)
    assert s.defaults.max_lifetime == GoDuration.of(hours=12)
    assert s.limits.max_gang_size == 16
    assert s.limits.max_keep_warm_ttl == GoDuration.of(hours=2)
    assert s.allowed_instance_types == ("p5.*", "p4d.24xlarge")
    assert s.allowed_node_role_arns == tuple(CUSTOM["allowedNodeRoleArns"])
    assert (s.reap_interval_seconds, s.join_deadline_seconds) == (30, 900)
    assert (s.acquire_attempts_before_retry, s.max_concurrent_pool_reconciles) == (3, 9)
    assert s.health_grace_seconds == 0
    assert s.acquire_retry.backoff_base_seconds == 1.5
    assert s.leader_election.namespace == "leases"
    assert s.leader_election.lease_duration_seconds == 30
    assert s.iam.self_manage_instance_profile is True
    assert s.job_set_username == "system:serviceaccount:batch-system:jobset"
    assert (
        s.trainer_username == "system:serviceaccount:kubeflow:kubeflow-trainer-controller-manager"
    )


def test_every_positive_render_is_a_settings_file_both_services_accept(
    renders: dict[str, Rendered], tmp_path: Path
) -> None:
    """What start-up checks (cross-field rules included) holds for every render."""
    for name in POSITIVE:
        _settings(renders[name], tmp_path)


def _file_keys(model: type[BaseModel]) -> set[str]:
    """The model's keys as a file names them (the fields' camelCase aliases)."""
    return {field.alias or name for name, field in model.model_fields.items()}


def test_the_configmap_holds_only_model_keys(renders: dict[str, Rendered]) -> None:
    for name in ("default", "custom", "extras", "no-webhook-no-le"):
        text = renders[name].one("ConfigMap", "-settings")["data"]["settings.yaml"]
        assert set(yaml.safe_load(text)) == _file_keys(GangSettings), name


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
    return schema


def _walk(model: type[BaseModel], node: dict[str, Any], path: str) -> list[str]:
    """Every place where the schema's settings keys differ from the model's fields."""
    problems: list[str] = []
    fields = _file_keys(model)
    props = set(node.get("properties", {}))
    if path and node.get("additionalProperties") is not False:
        problems.append(f"{path}: schema must forbid unknown keys")
    if path and props != fields:
        problems.append(f"{path}: schema {sorted(props ^ fields)} differ from the model")
    for field_name, field in model.model_fields.items():
        name = field.alias or field_name
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel) and name in node["properties"]:
            problems += _walk(sub, node["properties"][name], f"{path}.{name}".lstrip("."))
    return problems


def test_schema_mirrors_the_settings_model() -> None:
    schema = _schema()
    top = set(schema["properties"])

    assert schema["additionalProperties"] is False
    assert _file_keys(GangSettings) <= top, "a setting has no chart value"
    assert _walk(GangSettings, schema, "") == []


def test_values_yaml_defaults_equal_the_model_defaults() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    chart_defaults = {k: values[k] for k in _file_keys(GangSettings)}
    chart_defaults["leaderElection"] = {**chart_defaults["leaderElection"], "namespace": ""}

    assert GangSettings(**chart_defaults) == GangSettings()

"""The provisioner's one settings tree: read once from the environment and the file,
the environment first, and the pool's Knobs and the engine's config derived from it."""

from __future__ import annotations

import dataclasses
import os
from datetime import timedelta
from pathlib import Path

import pytest

from atomic_gang.settings import GangSettings, SettingsError
from atomic_gang_provisioner.cloud.turns.budget import BucketSpec
from atomic_gang_provisioner.pool.model import ConditionRule
from atomic_gang_provisioner.settings import ProvisionerSettings, load, resolve
from tests.support.jobs import ROLE

FILE = f"""\
clusterName: from-file
defaults: {{region: us-east-1, nodeRoleArn: "{ROLE}"}}
maxConcurrentPoolReconciles: 4
joinDeadlineSeconds: 900
acquireRetry: {{backoffBaseSeconds: 2, backoffMaxSeconds: 30}}
ec2Api: {{runInstancesBurst: 9, batchIdleSeconds: 0.02, describeReuseSeconds: 3}}
capacityBlock: {{drainLeadSeconds: 2000}}
iam: {{selfManageInstanceProfile: true}}
nodeHealth: {{conditions: [{{type: example.com/GpuHealthy, status: "False", graceSeconds: 5}}]}}
repair: {{deadlineSeconds: 300, maxNodes: 2, maxRepairs: 1}}
"""


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for key in [k for k in os.environ if k.upper().startswith("ATOMIC_GANG_")]:
        monkeypatch.delenv(key)
    return monkeypatch


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "settings.yaml"
    path.write_text(FILE)
    return str(path)


def test_the_tree_holds_the_file_and_the_views_made_from_it(
    env: pytest.MonkeyPatch, config: str
) -> None:
    s = load(config)

    assert s.gang.cluster_name == "from-file"
    assert s.server.pool_workers is None
    assert s.pool_workers == 4
    assert s.knobs.cluster == s.engine.cluster == "from-file"
    assert s.knobs.join_deadline == timedelta(seconds=900)
    assert (s.knobs.backoff_base, s.knobs.backoff_max) == (2, 30)
    assert s.knobs.liveness_window == timedelta(seconds=3)
    assert s.knobs.block_drain_lead == timedelta(seconds=2000)
    assert s.engine.limits.run_instances == BucketSpec(9, 2.0)
    assert s.engine.batch.idle_seconds == 0.02
    assert s.engine.describe_reuse_seconds == 3
    assert s.engine.self_manage_instance_profile is True
    assert s.knobs.health_conditions == (
        ConditionRule("example.com/GpuHealthy", "False", timedelta(seconds=5)),
    )
    assert s.knobs.repair_enabled is True
    assert s.knobs.repair_deadline == timedelta(seconds=300)
    assert (s.knobs.repair_max_nodes, s.knobs.max_repairs) == (2, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.pool_workers = 1  # type: ignore[misc]


def test_the_environment_wins_over_the_file(env: pytest.MonkeyPatch, config: str) -> None:
    env.setenv("ATOMIC_GANG_CLUSTERNAME", "from-env")
    env.setenv("ATOMIC_GANG_EC2API__DESCRIBEREUSESECONDS", "7")
    env.setenv("ATOMIC_GANG_PROVISIONER_ENI_WAIT_SECONDS", "12")

    s = load(config)

    assert (s.gang.cluster_name, s.knobs.cluster, s.engine.cluster) == ("from-env",) * 3
    assert s.knobs.liveness_window == timedelta(seconds=7)
    assert s.engine.describe_reuse_seconds == 7
    assert s.engine.eni_wait_seconds == 12


@pytest.mark.parametrize(
    ("variable", "workers"),
    [
        pytest.param(None, 4, id="maxConcurrentPoolReconciles"),
        pytest.param("2", 2, id="ATOMIC_GANG_PROVISIONER_POOL_WORKERS-wins"),
    ],
)
def test_the_process_variable_wins_over_the_shared_setting(
    env: pytest.MonkeyPatch, config: str, variable: str | None, workers: int
) -> None:
    if variable is not None:
        env.setenv("ATOMIC_GANG_PROVISIONER_POOL_WORKERS", variable)
    assert load(config).pool_workers == workers


def test_what_the_provisioner_needs_is_required(env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError, match=r"required but empty: clusterName, defaults\.region"):
        load("")


def test_a_misspelt_process_variable_stops_it(env: pytest.MonkeyPatch, config: str) -> None:
    env.setenv("ATOMIC_GANG_PROVISIONER_POOL_WORKER", "2")
    with pytest.raises(SettingsError, match="did you mean ATOMIC_GANG_PROVISIONER_POOL_WORKERS"):
        load(config)


def test_resolve_is_what_load_builds(env: pytest.MonkeyPatch, config: str) -> None:
    s = load(config)
    assert isinstance(s, ProvisionerSettings)
    assert resolve(s.gang, s.server) == s


def test_the_default_node_health_is_the_monitoring_agents_conditions() -> None:
    rules = {(c.type, c.status): c.grace_seconds for c in GangSettings().node_health.conditions}
    assert rules == {
        ("AcceleratedHardwareReady", "False"): 60,
        ("NetworkingReady", "False"): 60,
        ("KernelReady", "False"): 300,
        ("StorageReady", "False"): 300,
        ("ContainerRuntimeReady", "False"): 300,
    }


@pytest.mark.parametrize(
    ("conditions", "says"),
    [
        ("[{type: Ready}]", "Ready is judged by healthGraceSeconds"),
        ("[{type: A}, {type: A}]", "A=False is listed twice"),
        ('[{type: "not a type!"}]', "type"),
        ("[{type: A, graceSeconds: -1}]", "graceSeconds"),
    ],
)
def test_a_bad_node_health_condition_is_refused_naming_it(
    env: pytest.MonkeyPatch, tmp_path: Path, conditions: str, says: str
) -> None:
    path = tmp_path / "settings.yaml"
    kept = [line for line in FILE.splitlines() if not line.startswith("nodeHealth")]
    path.write_text("\n".join([*kept, f"nodeHealth: {{conditions: {conditions}}}", ""]))
    with pytest.raises(SettingsError, match=says):
        load(str(path))

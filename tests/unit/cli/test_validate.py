"""``atomic-gang validate``: line format, CronJobs and Lists, exit codes 0/1/2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from atomic_gang import keys as k
from atomic_gang_cli.main import main
from tests.support.jobs import gang_job, gang_jobset, gang_trainjob, one_pod_per_node, plain_job

SETTINGS = """\
clusterName: my-eks-cluster
defaults: {region: us-east-1, nodeRoleArn: "arn:aws:iam::123456789012:role/eks-gang-node-role"}
allowedInstanceTypes: ["p4d.24xlarge", "p5.*"]
"""


def _write(tmp_path: Path, name: str, *docs: object) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    code = info.value.code
    assert isinstance(code, int)
    return code, out, err


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "settings.yaml"
    path.write_text(SETTINGS)
    return str(path)


def test_all_valid_exits_0(tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]) -> None:
    job = one_pod_per_node(gang_job())
    path = _write(tmp_path, "ok.yaml", job, plain_job(), {"kind": "ConfigMap"})
    assert _run(capsys, "validate", "--config", config, str(path)) == (0, "", "")


def test_webhook_warnings_go_to_stderr(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "packed.yaml", gang_job(name="packed"))
    code, out, err = _run(capsys, "validate", "--config", config, str(path))
    assert (code, out) == (0, "")
    assert err.startswith(f"{path}:Job/packed: warning: atomic-gang: the 4 gang pods may share")


def test_unqueued_gang_and_squatting_plain_job_are_invalid(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    unqueued = one_pod_per_node(gang_job(name="unqueued", labels={k.QUEUE_NAME_LABEL: None}))
    squatter = plain_job("squatter")
    squatter["spec"]["template"]["spec"]["nodeSelector"] = {k.POOL: "pretrain-p4d"}
    path = _write(tmp_path, "jobs.yaml", unqueued, squatter)
    code, out, _ = _run(capsys, "validate", "--config", config, str(path))
    assert code == 1
    assert out.splitlines() == [
        f"{path}:Job/unqueued: {k.QUEUE_NAME_LABEL}: a gang Job needs the Kueue queue label, "
        "or Kueue ignores it and its pods start at once on ordinary nodes, with no gang "
        f"[NotQueued]; add the label {k.QUEUE_NAME_LABEL}: <local-queue>, or set "
        "manageJobsWithoutQueueName where Kueue manages every Job",
        f"{path}:Job/squatter: {k.POOL}: selects gang nodes; only Kueue sets it, from the "
        "provisioner's podSetUpdates (got 'pretrain-p4d') [ReservedSelectorKey]; remove it "
        "from the pod template: Kueue adds it once the gang's own nodes are Ready",
    ]


def test_one_line_per_violation(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = gang_job(name="bad", annotations={k.MODE: "spot", k.INSTANCE_TYPE: "c5.large"})
    path = _write(tmp_path, "jobs.yaml", gang_job(), bad)
    code, out, _ = _run(capsys, "validate", "--config", config, str(path))
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}:Job/bad: {k.INSTANCE_TYPE}: is not in allowedInstance")
    assert lines[1].startswith(f"{path}:Job/bad: {k.MODE}: must be one of runinstances, fleet")


def test_reservation_lists_and_min_runtime_are_checked(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = gang_job(
        name="listed",
        annotations={
            k.CAPACITY_RESERVATION_ID: "cr-0123456789abcdef0, cr-00000000",
            k.MIN_RUNTIME: "3h",
        },
    )
    bad = gang_job(
        name="bad",
        annotations={k.CAPACITY_RESERVATION_ID: "cr-00000000,od-1", k.MIN_RUNTIME: "3 hours"},
    )
    path = _write(tmp_path, "jobs.yaml", listed, bad)
    code, out, _ = _run(capsys, "validate", "--config", config, str(path))
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(
        f"{path}:Job/bad: {k.CAPACITY_RESERVATION_ID}: every entry must be a cr-… id"
        " ('od-1' is not)"
    )
    assert lines[1].startswith(f"{path}:Job/bad: {k.MIN_RUNTIME}: is not a Go duration")


def test_cronjob_and_list_items_are_checked(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = gang_job(annotations={k.COUNT: "3"})
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"jobTemplate": {"metadata": bad["metadata"], "spec": bad["spec"]}},
    }
    lst = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [dict(bad, metadata={**bad["metadata"], "name": "in-list"})],
    }
    path = _write(tmp_path, "more.yaml", cron, lst)
    code, out, _ = _run(capsys, "validate", "--config", config, str(path))
    assert code == 1
    assert f"{path}:CronJob/nightly: {k.COUNT}: must equal spec.parallelism" in out
    assert f"{path}:Job/in-list: {k.COUNT}:" in out


def test_unreadable_input_exits_2(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [\n")
    good = _write(tmp_path, "ok.yaml", gang_job())
    code, _, err = _run(
        capsys,
        "validate",
        "--config",
        config,
        str(good),
        str(broken),
        str(tmp_path / "missing.yaml"),
    )
    assert code == 2
    assert "broken.yaml: cannot read" in err
    assert "missing.yaml: cannot read" in err


def test_bad_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("limits: {maxGangSiz: 3}\n")
    code, _, err = _run(capsys, "validate", "--config", str(cfg), str(cfg))
    assert code == 2
    assert "limits.maxGangSiz: unknown setting" in err


def test_reasons_lists_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "reasons")
    assert code == 0
    assert "CountMismatch" in out.split()


def test_console_script_reads_stdin(config: str) -> None:
    doc = yaml.safe_dump(gang_job(annotations={k.COUNT: "x"}))
    result = subprocess.run(
        [sys.executable, "-m", "atomic_gang_cli", "validate", "--config", config, "-"],
        input=doc,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert f"-:Job/allreduce-pretrain: {k.COUNT}: must be a positive integer" in result.stdout


def test_help_names_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "validate", "--help")
    assert code == 0
    assert "0 all valid, 1 some invalid, 2 unreadable" in out


def test_network_annotations_are_checked_too(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    net: dict[str, str | None] = {k.PLACEMENT: "cluster", k.EFA: "true", k.MAX_SPREAD: "1"}
    good = one_pod_per_node(gang_job(name="fast", annotations=net))
    bad = one_pod_per_node(
        gang_job(name="both", annotations={**net, k.PLACEMENT_GROUP_NAME: "team-pg"})
    )
    path = _write(tmp_path, "net.yaml", good, bad)
    code, out, _ = _run(capsys, "validate", "--config", config, str(path))
    assert code == 1
    assert out.splitlines() == [
        f"{path}:Job/both: {k.PLACEMENT_GROUP_NAME}: cannot be combined with {k.PLACEMENT} "
        f"(got 'team-pg') [PlacementExclusive]; {k.PLACEMENT} makes a group the pool owns; "
        f"{k.PLACEMENT_GROUP_NAME} launches into an existing one: keep one of the two"
    ]


def test_a_reserved_pool_name_is_judged_in_the_jobs_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text(SETTINGS + 'poolNamespaces: [{names: "pretrain-*", namespaces: [team-a]}]\n')
    ours, theirs = (
        one_pod_per_node(gang_job(name="ours")),
        one_pod_per_node(gang_job(name="theirs")),
    )
    ours["metadata"]["namespace"], theirs["metadata"]["namespace"] = "team-a", "team-b"
    path = _write(tmp_path, "jobs.yaml", ours, theirs)
    code, out, _ = _run(capsys, "validate", "--config", str(config), str(path))
    assert code == 1
    assert out.splitlines() == [
        f"{path}:Job/theirs: atomic-gang.k8s.aws/pool: is reserved for other namespaces by "
        "the cluster's admin (poolNamespaces) (got 'pretrain-p4d') [PoolReserved]; use a pool "
        "label of your own"
    ]


def test_a_jobset_file_is_judged_by_the_jobset_rules(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path, "jobsets.yaml", gang_jobset(name="ok"), gang_jobset(name="short", count=3)
    )
    code, out, _ = _run(capsys, "validate", "--config", config, str(path))
    assert code == 1
    (line,) = out.splitlines()
    assert line.startswith(f"{path}:JobSet/short: atomic-gang.k8s.aws/count: must equal the pods")
    assert "workers: 2 replicas × 2 = 4 pods" in line


def test_trainjob_and_runtime_files_are_judged_by_the_trainjob_rules(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    claiming = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-on-gang"},
        "spec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "tolerations": [
                                                {"key": k.GANG_TAINT, "operator": "Exists"}
                                            ]
                                        }
                                    }
                                }
                            },
                        }
                    ]
                }
            }
        },
    }
    path = _write(
        tmp_path,
        "trainjobs.yaml",
        gang_trainjob(name="ok"),
        gang_trainjob(name="short", count=3),
        claiming,
    )
    code, out, err = _run(capsys, "validate", "--config", config, str(path))
    assert code == 1
    assert out.splitlines() == [
        f"{path}:TrainJob/short: atomic-gang.k8s.aws/count: must equal "
        "spec.trainer.numNodes (4) (got '3') [CountMismatch]; the gang is the TrainJob's "
        "training nodes: set atomic-gang.k8s.aws/count to 4, or numNodes to the count",
        f"{path}:ClusterTrainingRuntime/torch-on-gang: atomic-gang.k8s.aws/gang: tolerates "
        "the gang taint atomic-gang.k8s.aws/gang; only Kueue adds that, for the gang that "
        "owns the nodes (got 'Exists') [ReservedToleration]; remove it; to tolerate other "
        "taints, name their keys (an empty key with operator Exists tolerates every taint)",
    ]
    assert err == ""

"""The scale bench's watch stamps: our check's writes per gang, one per change, and the
report that masks their numbers and names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from atomic_gang_devstack import dev_objects
from atomic_gang_provisioner.kube import KubeClient
from bench.scale_report import check_writes_report
from bench.system_stack import Stamps

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def _workload(*checks: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "team", "name": "job-a"},
        "status": {
            "admissionChecks": [
                {"name": name, "state": state, "message": message}
                for name, state, message in checks
            ]
        },
    }


@pytest.fixture
def stamps(tmp_path: Path) -> Stamps:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    return Stamps(KubeClient.from_kubeconfig(tmp_path / "kubeconfig"))  # never started


def test_each_change_of_our_check_counts_once(stamps: Stamps) -> None:
    ours = dev_objects.ADMISSION_CHECK
    for state, message in [
        ("Pending", ""),
        ("Pending", "Created pool p; acquiring 8×p4d.24xlarge"),
        ("Pending", "Created pool p; acquiring 8×p4d.24xlarge"),  # another writer's update
        ("Pending", "Launched 8×p4d.24xlarge (group 17); 0/8 nodes Ready"),
        ("Ready", "8/8 nodes of group 17 are Ready"),
    ]:
        stamps.on_workload(_workload((ours, state, message), ("other-check", "Pending", "x")))
    assert [s for s, _ in stamps.check_writes["team/job-a"]] == [
        "Pending",
        "Pending",
        "Pending",
        "Ready",
    ]
    assert "team/job-a" in stamps.check_ready


def test_the_report_masks_numbers_and_names(capsys: pytest.CaptureFixture[str]) -> None:
    check_writes_report(  # three of ours over two gangs
        {
            "a/1": [
                ("Pending", ""),  # Kueue's entry, not ours
                ("Pending", "Acquiring 8×p4d.24xlarge (runinstances, subnet-0e1f2a3b)"),
            ],
            "a/2": [
                ("Pending", "Launched 4×p4d.24xlarge (group 9); 1/4 nodes Ready"),
                ("Ready", "4/4 nodes of group 9 are Ready"),
            ],
        }
    )
    out = capsys.readouterr().out
    assert "our check's writes a gang (the bench's watch): 1.50" in out
    assert "    1  Pending: Acquiring #×p#d.#xlarge (runinstances, #)" in out
    assert "    1  Pending: Launched #×p#d.#xlarge (group #); #/# nodes Ready" in out
    assert "    1  Ready: #/# nodes of group # are Ready" in out

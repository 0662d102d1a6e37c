"""The scale bench's watch stamps: our check's writes per gang, one per change, and the
report that masks their numbers and names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_devstack import dev_objects
from atomic_gang_provisioner.kube import KubeClient
from bench.scale_report import CONTROLLER, check_writes_report, lapsed_before_release
from bench.scale_stamps import latencies, split
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


def _node(iid: str, *, ready: bool, layer: bool) -> dict[str, Any]:
    labels = {keys.GROUP: "g1"} | (
        {"topology.k8s.aws/network-node-layer-1": "nn-1"} if layer else {}
    )
    status = "True" if ready else "False"
    return {
        "metadata": {"name": f"n-{iid}", "labels": labels},
        "spec": {"providerID": f"aws:///us-east-1a/{iid}"},
        "status": {"conditions": [{"type": "Ready", "status": status}]},
    }


def test_a_label_patched_after_the_last_ready_is_measured_on_the_pool_side(
    stamps: Stamps,
) -> None:
    """i-1 was labelled before it turned Ready, i-2 (the last Ready) only after."""
    stamps.on_node(_node("i-1", ready=False, layer=True))
    stamps.on_node(_node("i-1", ready=True, layer=True))
    stamps.on_node(_node("i-2", ready=True, layer=False))
    stamps.on_node(_node("i-2", ready=True, layer=True))
    stamps.satisfied["g1"] = stamps.node_labelled["i-2"] + 0.1
    stamps.check_ready["team/job-a"] = (stamps.satisfied["g1"] + 0.2, "g1")
    sides = split(stamps)
    assert stamps.node_labelled["i-1"] <= stamps.node_ready["i-1"][0]
    (after,) = sides["last label after"]
    assert after == stamps.node_labelled["i-2"] - stamps.node_ready["i-2"][0]
    assert after >= 0
    assert sides["pool"][0] >= after


def test_the_reaction_counts_from_the_not_ready_taint_lifted_not_the_ready_condition(
    stamps: Stamps,
) -> None:
    """Satisfied waits for the node lifecycle controller to lift the taint: the reaction
    is ours from then; from the condition alone it is also printed."""
    tainted = _node("i-1", ready=True, layer=False)
    tainted["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    stamps.on_node(tainted)
    assert "i-1" not in stamps.node_untainted
    stamps.on_node(_node("i-1", ready=True, layer=False))
    ready, lifted = stamps.node_ready["i-1"][0], stamps.node_untainted["i-1"]
    stamps.check_ready["team/job-a"] = (lifted + 0.25, "g1")
    ((from_lift, _),) = latencies(stamps, [])
    ((from_condition, _),) = latencies(stamps, [], for_pods=False)
    assert from_lift == pytest.approx(0.25)
    assert from_condition == pytest.approx(lifted + 0.25 - ready)


def _node_now(iid: str, ready: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"ip-{iid}", "labels": {keys.GROUP: "g1"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-05T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"providerID": f"aws:///us-east-1a/{iid}"},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def test_a_node_whose_ready_lapses_before_its_release_is_counted(stamps: Stamps) -> None:
    """Not Ready before it was ever Ready, or while it is being deleted: not a lapse.
    Not Ready again after Ready: one, counted only before its instance's termination."""
    stamps.on_node(_node_now("i-1", "False"))
    assert stamps.node_lapsed == {}
    for iid in ("i-1", "i-2", "i-3"):
        stamps.on_node(_node_now(iid, "True"))
    stamps.on_node(_node_now("i-1", "Unknown"))
    stamps.on_node(_node_now("i-2", "Unknown", deleting=True))
    stamps.on_node(_node_now("i-3", "Unknown"))
    assert set(stamps.node_lapsed) == {"i-1", "i-3"}
    lapsed = {"i-1": 10.0, "i-3": 30.0}
    terminate = {
        "caller": CONTROLLER,
        "action": "TerminateInstances",
        "at": 20.0,
        "params": {"InstanceId.1": "i-1", "InstanceId.2": "i-3"},
    }
    assert lapsed_before_release(lapsed, [terminate]) == 1
    assert lapsed_before_release(lapsed, []) == 2

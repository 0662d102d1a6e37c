"""Start waves from component dependencies, and the state file round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from atomic_gang_devstack.component import Component
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.procs import ProcRecord
from atomic_gang_devstack.stack import waves
from atomic_gang_devstack.state import StackOptions, StackState, load


def _comp(name: str, *needs: str) -> Component:
    cls = type(name, (Component,), {"name": name, "needs": needs})
    return cls()  # type: ignore[no-any-return]


def _names(ws: list[list[Component]]) -> list[list[str]]:
    return [[c.name for c in w] for w in ws]


def test_waves_group_independent_components() -> None:
    comps = [_comp("etcd"), _comp("api", "etcd"), _comp("kcm", "api"), _comp("hook")]
    assert _names(waves(comps)) == [["etcd", "hook"], ["api"], ["kcm"]]


@pytest.mark.parametrize(
    ("comps", "message"),
    [
        pytest.param([_comp("a", "b"), _comp("b", "a")], "cycle", id="cycle"),
        pytest.param([_comp("a", "zzz")], "unknown", id="unknown-dependency"),
        pytest.param([_comp("a"), _comp("a")], "duplicate", id="duplicate"),
    ],
)
def test_waves_reject_bad_graphs(comps: list[Component], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        waves(comps)


def test_default_stack_order(tmp_path: Path) -> None:
    opts = StackOptions(state_dir=tmp_path, fake_nodes=1)
    assert _names(waves(default_components(opts))) == [
        ["etcd", "atomic-gang-webhook"],
        ["kube-apiserver"],
        ["kube-controller-manager", "kube-scheduler", "kwok", "jobset-crd", "trainer-crds"],
        ["jobset", "kueue", "atomic-gang-node-policy", "fake-nodes"],
        ["trainer", "atomic-gang-webhook-registration", "kueue-queues"],
        ["trainer-runtimes"],
    ]


def test_optional_components_can_be_left_out(tmp_path: Path) -> None:
    opts = StackOptions(state_dir=tmp_path, webhook=False, queues=False)
    names = [c.name for c in default_components(opts)]
    assert "atomic-gang-webhook" not in names
    assert "atomic-gang-node-policy" not in names
    assert "kueue-queues" not in names
    assert "fake-nodes" not in names


def test_without_jobset_kueue_starts_on_the_apiserver_alone(tmp_path: Path) -> None:
    opts = StackOptions(state_dir=tmp_path, jobset=False, trainer=False)
    comps = {c.name: c for c in default_components(opts)}
    assert not {"jobset-crd", "jobset", "trainer-crds", "trainer", "trainer-runtimes"} & set(comps)
    assert comps["kueue"].needs == ("kube-apiserver",)
    assert comps["kueue"].frameworks == ("batch/job",)  # type: ignore[attr-defined]


def test_kueue_waits_for_the_trainer_crds_and_the_trainer_for_jobset(tmp_path: Path) -> None:
    comps = {c.name: c for c in default_components(StackOptions(state_dir=tmp_path))}
    assert comps["kueue"].needs == ("kube-apiserver", "jobset-crd", "trainer-crds")
    assert comps["kueue"].frameworks == (  # type: ignore[attr-defined]
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "trainer.kubeflow.org/trainjob",
    )
    assert comps["trainer"].needs == ("trainer-crds", "jobset")
    assert comps["trainer-runtimes"].needs == ("trainer",)


def test_without_the_trainer_jobset_stays(tmp_path: Path) -> None:
    comps = {c.name: c for c in default_components(StackOptions(state_dir=tmp_path, trainer=False))}
    assert not {"trainer-crds", "trainer", "trainer-runtimes"} & set(comps)
    assert {"jobset-crd", "jobset"} <= set(comps)
    assert comps["kueue"].needs == ("kube-apiserver", "jobset-crd")


def test_the_trainer_needs_jobset(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="trainer needs jobset"):
        StackOptions(state_dir=tmp_path, jobset=False)


def test_state_round_trips(tmp_path: Path) -> None:
    st = StackState(options=StackOptions(state_dir=tmp_path))
    st.ports["apiserver"] = 12345
    st.procs["etcd"] = ProcRecord(name="etcd", pid=1, start_ticks=2, argv=("etcd",), log="x")
    st.save()
    assert load(tmp_path) == st
    assert load(tmp_path / "nothing-here") is None

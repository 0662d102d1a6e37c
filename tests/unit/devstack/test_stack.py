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
        ["kube-controller-manager", "kube-scheduler", "kwok", "jobset-crd"],
        ["jobset", "kueue", "atomic-gang-node-policy", "fake-nodes"],
        ["atomic-gang-webhook-registration", "kueue-queues"],
    ]


def test_optional_components_can_be_left_out(tmp_path: Path) -> None:
    opts = StackOptions(state_dir=tmp_path, webhook=False, queues=False)
    names = [c.name for c in default_components(opts)]
    assert "atomic-gang-webhook" not in names
    assert "atomic-gang-node-policy" not in names
    assert "kueue-queues" not in names
    assert "fake-nodes" not in names


def test_without_jobset_kueue_starts_on_the_apiserver_alone(tmp_path: Path) -> None:
    opts = StackOptions(state_dir=tmp_path, jobset=False)
    comps = {c.name: c for c in default_components(opts)}
    assert "jobset-crd" not in comps
    assert "jobset" not in comps
    assert comps["kueue"].needs == ("kube-apiserver",)


def test_state_round_trips(tmp_path: Path) -> None:
    st = StackState(options=StackOptions(state_dir=tmp_path))
    st.ports["apiserver"] = 12345
    st.procs["etcd"] = ProcRecord(name="etcd", pid=1, start_ticks=2, argv=("etcd",), log="x")
    st.save()
    assert load(tmp_path) == st
    assert load(tmp_path / "nothing-here") is None

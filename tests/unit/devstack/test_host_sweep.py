"""What a stack that starts does with the host changes an abandoned node left: each dead
holder's node undone, and, once no live holder is left, the shared sysctls put back as
they were without any node (a `make cluster-up` replaced by `make dev-up` left them
changed, and the teardown test then measured against a dirty host)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atomic_gang_devstack.node import host


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A registry and a /proc/sys of the test's own; ``alive`` says which slots live."""
    run, proc = tmp_path / "run", tmp_path / "proc"
    for key in host.SYSCTLS:
        (proc / key).parent.mkdir(parents=True, exist_ok=True)
        (proc / key).write_text("1\n")  # what the abandoned node's kubelet set
    monkeypatch.setattr(host, "RUN_DIR", run)
    monkeypatch.setattr(host, "REGISTRY", run / "host.json")
    monkeypatch.setattr(host, "PROC_SYS", proc)
    seen: dict[str, Any] = {"alive": set(), "undone": [], "proc": proc, "run": run}
    monkeypatch.setattr(host, "_alive", lambda net, _held: net.slot in seen["alive"])

    def undo(net: Any, tree: Path) -> list[str]:
        seen["undone"].append(net.slot)
        return []

    monkeypatch.setattr(host, "_undo_node", undo)
    return seen


def registry(run: Path, holders: dict[int, str]) -> None:
    run.mkdir(parents=True, exist_ok=True)
    originals = dict.fromkeys(host.SYSCTLS, "0")
    held = {str(slot): {"tree": tree, "launcher": ""} for slot, tree in holders.items()}
    reg = {"sysctls": originals, "created": [], "holders": held}
    (run / "host.json").write_text(json.dumps(reg))


def test_an_abandoned_node_is_undone_and_the_host_put_back(fake_host: dict[str, Any]) -> None:
    registry(fake_host["run"], {3: "/tmp/old-stack/node"})
    assert host.sweep() == []
    assert fake_host["undone"] == [3]
    assert host.read_sysctls() == dict.fromkeys(host.SYSCTLS, "0")  # as before any node
    assert not fake_host["run"].exists()  # nothing of ours stays in /run


def test_a_live_node_keeps_the_host_changes_it_shares(fake_host: dict[str, Any]) -> None:
    registry(fake_host["run"], {1: "/tmp/live/node", 2: "/tmp/dead/node"})
    fake_host["alive"].add(1)
    host.sweep()
    assert fake_host["undone"] == [2]
    assert host.read_sysctls() == dict.fromkeys(host.SYSCTLS, "1")  # still the node's
    kept = json.loads((fake_host["run"] / "host.json").read_text())
    assert list(kept["holders"]) == ["1"]


def test_a_host_no_node_ever_touched_is_left_alone(fake_host: dict[str, Any]) -> None:
    assert host.sweep() == []
    assert fake_host["undone"] == []
    assert not fake_host["run"].exists()  # not even a lock file is made

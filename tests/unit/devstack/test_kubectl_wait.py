"""wait_established polls through the window where a new CRD has no conditions yet."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from atomic_gang_devstack.kubectl import Kubectl, KubectlError

NO_CONDITIONS = {"items": [{"metadata": {"name": "a.example.com"}, "status": {}}]}
ESTABLISHED = {
    "items": [
        {
            "metadata": {"name": "a.example.com"},
            "status": {"conditions": [{"type": "Established", "status": "True"}]},
        }
    ]
}


def scripted_kubectl(tmp_path: Path, answers: list[Any]) -> Kubectl:
    """A kubectl stand-in that prints the next answer on each call (the last one repeats)."""
    for i, answer in enumerate(answers):
        (tmp_path / f"answer{i}.json").write_text(json.dumps(answer))
    script = tmp_path / "kubectl"
    script.write_text(
        "#!/bin/sh\n"
        f'n=$(cat "{tmp_path}/count" 2>/dev/null || echo 0)\n'
        f'echo $((n + 1)) > "{tmp_path}/count"\n'
        f'[ "$n" -ge {len(answers)} ] && n={len(answers) - 1}\n'
        f'cat "{tmp_path}/answer$n.json"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return Kubectl(binary=script, kubeconfig=tmp_path / "kubeconfig")


def test_a_crd_without_conditions_yet_is_waited_for(tmp_path: Path) -> None:
    kubectl = scripted_kubectl(tmp_path, [NO_CONDITIONS, NO_CONDITIONS, ESTABLISHED])
    kubectl.wait_established(["a.example.com"], timeout=10)
    assert (tmp_path / "count").read_text().strip() == "3"


def test_a_crd_that_never_establishes_names_itself(tmp_path: Path) -> None:
    kubectl = scripted_kubectl(tmp_path, [NO_CONDITIONS])
    with pytest.raises(KubectlError, match=r"a\.example\.com"):
        kubectl.wait_established(["a.example.com"], timeout=0.5)

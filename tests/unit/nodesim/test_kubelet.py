"""kubelet flag parsing: --node-labels and --register-with-taints, as kubelet reads them."""

from __future__ import annotations

import pytest

from atomic_gang_nodesim.kubelet import FlagError, Taint, parse_flags


def test_both_flag_forms_and_repeats_accumulate() -> None:
    labels, taints = parse_flags(
        [
            "--node-labels=a=1,example.com/b=2",
            "--node-labels",
            "c=",
            "--register-with-taints=x=y:NoSchedule,z:NoExecute",
            "--max-pods=58",
        ]
    )
    assert labels == {"a": "1", "example.com/b": "2", "c": ""}
    assert taints == (Taint("x", "y", "NoSchedule"), Taint("z", "", "NoExecute"))
    assert Taint("z", "", "NoExecute").to_dict() == {"key": "z", "effect": "NoExecute"}


def test_kubelet_may_set_its_own_well_known_labels() -> None:
    labels, _ = parse_flags(
        ["--node-labels=node.kubernetes.io/instance-type=p4d.24xlarge,kubernetes.io/os=linux"]
    )
    assert labels["node.kubernetes.io/instance-type"] == "p4d.24xlarge"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--node-labels=novalue"], "not key=value", id="label-without-equals"),
        pytest.param(["--node-labels=-bad=1"], "invalid label/taint key", id="bad-key"),
        pytest.param(["--node-labels=a=" + "v" * 64], "invalid label value", id="long-value"),
        pytest.param(["--node-labels=a=b c"], "invalid label value", id="space-in-value"),
        pytest.param(
            ["--node-labels=node-role.kubernetes.io/worker="],
            "may not set label",
            id="restricted-namespace",
        ),
        pytest.param(["--register-with-taints=a=b"], "needs an effect", id="taint-no-effect"),
        pytest.param(["--register-with-taints=a:Never"], "needs an effect", id="taint-bad-effect"),
        pytest.param(["node-labels=a=b"], "is not a flag", id="not-a-flag"),
    ],
)
def test_flags_kubelet_refuses(flags: list[str], message: str) -> None:
    with pytest.raises(FlagError, match=message):
        parse_flags(flags)

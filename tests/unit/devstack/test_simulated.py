"""The dev stack's cloud side: capacity file, aws.env, and where the simulator starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_devstack.components import default_components
from atomic_gang_devstack.components.simulated import CapacityFile, FakeAwsSetup, env_file_text
from atomic_gang_devstack.stack import waves
from atomic_gang_devstack.state import StackOptions


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def set_default_capacity(self, count: int | None) -> None:
        self.calls.append(("default", count))

    def set_capacity(self, zone: str, instance_type: str, count: int | None) -> None:
        self.calls.append((zone, instance_type, count))


def test_the_checked_in_capacity_file_is_generous() -> None:
    cap = CapacityFile.load(REPO_ROOT / "hack" / "devstack-capacity.yaml")
    assert cap.default is not None
    assert cap.default >= 16
    assert all(n is None or n >= 4 for types in cap.zones.values() for n in types.values())


def test_capacity_file_applies_default_then_pairs(tmp_path: Path) -> None:
    path = tmp_path / "cap.yaml"
    path.write_text("default: null\nzones:\n  us-east-1a: {p4d.24xlarge: 3}\n")
    rec = Recorder()
    CapacityFile.load(path).apply(rec)  # type: ignore[arg-type]
    assert rec.calls == [("default", None), ("us-east-1a", "p4d.24xlarge", 3)]


def test_capacity_file_rejects_typos(tmp_path: Path) -> None:
    path = tmp_path / "cap.yaml"
    path.write_text("defualt: 3\n")
    with pytest.raises(ValidationError):
        CapacityFile.load(path)


def test_env_file_exports_everything() -> None:
    text = env_file_text({"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_DEFAULT_REGION": "x"})
    assert "export AWS_ENDPOINT_URL=http://127.0.0.1:1\n" in text
    assert "export AWS_DEFAULT_REGION=x\n" in text


def test_the_full_dev_stack_starts_simulator_after_kwok_and_fakeaws(tmp_path: Path) -> None:
    opts = StackOptions(state_dir=tmp_path, cloud=True, provisioners=2, nodesim=True)
    ws = [[c.name for c in w] for w in waves(default_components(opts))]
    flat = [n for w in ws for n in w]
    for name in ("fakeaws", "fakeaws-setup", "nodesim", "atomic-gang-provisioner-1"):
        assert name in flat
    level = {n: i for i, w in enumerate(ws) for n in w}
    assert level["nodesim"] > max(level["kwok"], level["fakeaws"])
    assert level["fakeaws-setup"] > level["fakeaws"]


class EnvCtx:
    """What ``FakeAwsSetup`` reads from a Context: its options and the fakeaws port."""

    def __init__(self, options: StackOptions) -> None:
        self.options = options

    def port(self, key: str) -> int:
        assert key == "fakeaws"
        return 4566


def test_setup_writes_aws_env_and_down_removes_it(tmp_path: Path) -> None:
    out = tmp_path / "dev" / "aws.env"
    ctx = EnvCtx(StackOptions(state_dir=tmp_path, cloud=True, aws_env_out=out))
    FakeAwsSetup().start(ctx)  # type: ignore[arg-type]
    text = out.read_text()
    assert "export AWS_ENDPOINT_URL=http://127.0.0.1:4566\n" in text
    assert "export AWS_DEFAULT_REGION=us-east-1\n" in text
    FakeAwsSetup().stop(ctx)  # type: ignore[arg-type]
    assert not out.exists()

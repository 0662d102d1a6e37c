"""Pins come from hack/build-bins.sh; binaries are cached by version."""

from __future__ import annotations

from pathlib import Path

import pytest

from atomic_gang_devstack import bins


def test_parse_pins_reads_default_versions() -> None:
    text = "ETCD_VERSION=${ETCD_VERSION:-v3.6.16}\nK8S_VERSION=${K8S_VERSION:-v1.36.3}\nX=1\n"
    assert bins.parse_pins(text) == {"ETCD": "v3.6.16", "K8S": "v1.36.3"}


def test_every_binary_has_a_pin_in_the_real_script() -> None:
    pins = bins.parse_pins(bins.BUILD_SCRIPT.read_text(encoding="utf-8"))
    assert {pin for pin, _ in bins.BINARIES.values()} <= set(pins)


def test_paths_are_versioned_under_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOMIC_GANG_CACHE", str(tmp_path))
    monkeypatch.setenv("KWOK_VERSION", "v9.9.9")
    b = bins.Bins.load()
    assert b.path("kwok") == tmp_path / "bin" / "kwok-v9.9.9"
    assert b.source("kwok") == tmp_path / "kwok-v9.9.9-src"
    assert b.path("kubectl").name == f"kubectl-{b.pins['K8S']}"
    assert "kwok" in b.missing()

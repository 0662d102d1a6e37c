"""KubeClient against a real apiserver: CRUD, typed errors, paging, optimistic writes."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from atomic_gang_provisioner.kube import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    KubeClient,
    NotFoundError,
    Resource,
    TransportError,
)
from tests.integration.kube.conftest import ControlPlane
from tests.support import resources as r

pytestmark = pytest.mark.kube


def cm(name: str, ns: str, **data: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": ns}, "data": data}


def test_create_get_patch_replace_delete(client: KubeClient, namespace: str) -> None:
    made = client.create(r.CONFIG_MAPS, cm("a", namespace, k="1"))
    assert made["kind"] == "ConfigMap"
    got = client.get(r.CONFIG_MAPS, "a", namespace=namespace)
    assert got["data"] == {"k": "1"}
    patched = client.patch(r.CONFIG_MAPS, "a", {"data": {"j": "2"}}, namespace=namespace)
    assert patched["data"] == {"k": "1", "j": "2"}
    patched["data"] = {"only": "this"}
    replaced = client.replace(r.CONFIG_MAPS, patched)
    assert replaced["data"] == {"only": "this"}
    client.delete(r.CONFIG_MAPS, "a", namespace=namespace)
    with pytest.raises(NotFoundError):
        client.get(r.CONFIG_MAPS, "a", namespace=namespace)


def test_typed_errors(client: KubeClient, namespace: str) -> None:
    with pytest.raises(NotFoundError) as nf:
        client.get(r.CONFIG_MAPS, "missing", namespace=namespace)
    assert nf.value.status == 404
    assert nf.value.reason == "NotFound"
    client.create(r.CONFIG_MAPS, cm("dup", namespace))
    with pytest.raises(AlreadyExistsError):
        client.create(r.CONFIG_MAPS, cm("dup", namespace))
    with pytest.raises(InvalidError) as inv:
        client.create(r.CONFIG_MAPS, cm("Not_A_DNS_Name", namespace))
    assert inv.value.status == 422
    with pytest.raises(NotFoundError):
        client.get(Resource("nope.example.com", "v1", "things", namespaced=False), "x")


def test_stale_resource_version_is_a_conflict(client: KubeClient, namespace: str) -> None:
    v1 = client.create(r.CONFIG_MAPS, cm("occ", namespace, n="1"))
    rv1 = v1["metadata"]["resourceVersion"]
    client.patch(
        r.CONFIG_MAPS, "occ", {"data": {"n": "2"}}, namespace=namespace, resource_version=rv1
    )
    with pytest.raises(ConflictError):
        client.patch(
            r.CONFIG_MAPS, "occ", {"data": {"n": "3"}}, namespace=namespace, resource_version=rv1
        )
    with pytest.raises(ConflictError):
        client.replace(r.CONFIG_MAPS, v1)  # still carries rv1
    assert client.get(r.CONFIG_MAPS, "occ", namespace=namespace)["data"] == {"n": "2"}


def test_delete_preconditions(client: KubeClient, namespace: str) -> None:
    made = client.create(r.CONFIG_MAPS, cm("pre", namespace))
    rv, uid = made["metadata"]["resourceVersion"], made["metadata"]["uid"]
    client.patch(r.CONFIG_MAPS, "pre", {"data": {"x": "y"}}, namespace=namespace)
    with pytest.raises(ConflictError):
        client.delete(r.CONFIG_MAPS, "pre", namespace=namespace, resource_version=rv)
    with pytest.raises(ConflictError):
        client.delete(r.CONFIG_MAPS, "pre", namespace=namespace, uid=str(uuid.uuid4()))
    client.delete(r.CONFIG_MAPS, "pre", namespace=namespace, uid=uid)
    with pytest.raises(NotFoundError):
        client.delete(r.CONFIG_MAPS, "pre", namespace=namespace)


def test_list_follows_continue_tokens(client: KubeClient, namespace: str) -> None:
    for i in range(7):
        client.create(r.CONFIG_MAPS, cm(f"p{i}", namespace))
    listing = client.list(r.CONFIG_MAPS, namespace=namespace, page_size=2)
    assert sorted(o["metadata"]["name"] for o in listing.items) == [f"p{i}" for i in range(7)]
    assert {(o["apiVersion"], o["kind"]) for o in listing.items} == {("v1", "ConfigMap")}
    assert int(listing.resource_version) > 0
    client.patch(r.CONFIG_MAPS, "p3", {"metadata": {"labels": {"pick": "me"}}}, namespace=namespace)
    picked = client.list(r.CONFIG_MAPS, namespace=namespace, label_selector="pick=me")
    assert [o["metadata"]["name"] for o in picked.items] == ["p3"]
    by_name = client.list(r.CONFIG_MAPS, namespace=namespace, field_selector="metadata.name=p5")
    assert [o["metadata"]["name"] for o in by_name.items] == ["p5"]


def test_forbidden_for_a_user_without_rbac(control_plane: ControlPlane) -> None:
    kubeconfig = control_plane.ctx.client_kubeconfig("nobody", "nobody")
    nobody = KubeClient.from_kubeconfig(kubeconfig)
    try:
        with pytest.raises(ForbiddenError) as err:
            nobody.list(r.NODES)
        assert err.value.status == 403
    finally:
        nobody.close()


def test_unreachable_apiserver_is_a_transport_error(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    cfg = yaml.safe_load(control_plane.kubeconfig.read_text(encoding="utf-8"))
    cfg["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"  # nothing listens there
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    c = KubeClient.from_kubeconfig(path)
    try:
        with pytest.raises(TransportError):
            c.get(r.NODES, "x", timeout=2)
    finally:
        c.close()

"""The CLI's read-only reader (``atomic-gang explain``) against the real apiserver: it
finds a namespace's Workloads and a GangNodePool by the shared coordinates, and a read
of what does not exist is None, not an error."""

from __future__ import annotations

from atomic_gang.resources import POOLS, WORKLOADS
from atomic_gang_cli.kube import Reader
from atomic_gang_provisioner.api.crd import crd
from atomic_gang_provisioner.kube import KubeClient
from tests.integration.kube.conftest import ControlPlane, install_crd
from tests.support.pools import pool


def reader(control_plane: ControlPlane) -> Reader:
    return Reader.from_kubeconfig(str(control_plane.kubeconfig), context=None)


def test_the_reader_lists_a_namespaces_workloads(
    client: KubeClient, control_plane: ControlPlane, namespace: str, workload_crd: None
) -> None:
    body = {"metadata": {"name": "wl-a", "namespace": namespace}, "spec": {"podSets": []}}
    client.create(WORKLOADS, {"apiVersion": WORKLOADS.api_version, "kind": "Workload", **body})
    found = reader(control_plane).workloads(namespace)
    assert [w["metadata"]["name"] for w in found] == ["wl-a"]
    assert reader(control_plane).workloads("default") == []


def test_the_reader_gets_a_pool_and_reads_a_missing_one_as_none(
    client: KubeClient, control_plane: ControlPlane
) -> None:
    install_crd(client, crd())
    p = pool()
    client.create(POOLS, {**p.to_dict(), "metadata": {"name": "cli-reader-pool"}})
    got = reader(control_plane).pool("cli-reader-pool")
    assert got is not None
    assert got["spec"]["shape"]["instanceType"] == p.spec.shape.instanceType
    assert reader(control_plane).pool("no-such-pool") is None
    assert reader(control_plane).denied == []

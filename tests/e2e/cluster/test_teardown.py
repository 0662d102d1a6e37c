"""Uninstall, and the host afterwards (this module runs last in the package, by name).

``helm uninstall`` removes the pods and leaves no webhook registration that
would block Jobs; then the stack stops and the host must match the snapshot
taken before it started: processes, mounts, links, addresses, cgroups,
sysctls, kubelet's fixed paths, iptables.
"""

from __future__ import annotations

import json

import pytest

from atomic_gang_devstack.node import snapshot
from tests.e2e.cluster.conftest import NAMESPACE, RELEASE, Cluster
from tests.e2e.jobs import gang_job
from tests.e2e.kube import wait_for

pytestmark = pytest.mark.e2e


def test_helm_uninstall_removes_pods_and_leaves_no_blocking_webhook(
    cluster: Cluster, namespace: str
) -> None:
    cluster.helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, "--wait")

    wait_for(
        lambda: not cluster.kube.items("pods", "-n", NAMESPACE),
        timeout=90,
        what="the release's pods gone",
    )
    names = cluster.kube.run("get", "validatingwebhookconfigurations", "-o", "name").stdout
    assert "atomic-gang" not in names
    job = gang_job("after-uninstall", namespace, queue=None)
    done = cluster.kube.run("create", "--dry-run=server", "-f", "-", stdin=json.dumps(job))
    assert done.returncode == 0, done.stderr  # nothing of ours is left to fail closed


def test_stack_down_leaves_the_host_as_it_was(cluster: Cluster) -> None:
    cluster.stack.down()
    cluster.down = True

    after = snapshot.snapshot()
    for key, before in cluster.host_before.items():
        assert after[key] == before, key

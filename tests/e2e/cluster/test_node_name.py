"""A Pod bound with ``spec.nodeName`` skips the scheduler, so no NoSchedule taint keeps
it off a node: on the real kubelet, such a Pod runs past a NoSchedule taint, and is
rejected by the kubelet once the node carries the NoExecute gang taint."""

from __future__ import annotations

import pytest

from atomic_gang import keys
from atomic_gang_devstack.components.node import NODE_NAME, node_images
from tests.e2e.cluster.conftest import Cluster, bound_pod
from tests.e2e.kube import wait_for

pytestmark = pytest.mark.e2e


def phase(cluster: Cluster, name: str, namespace: str) -> tuple[str, str]:
    pod = cluster.kube.get("pod", name, "-n", namespace)
    status = pod.get("status") or {}
    return str(status.get("phase", "")), str(status.get("reason", ""))


def test_node_name_passes_a_noschedule_taint_but_not_the_noexecute_gang_taint(
    cluster: Cluster, namespace: str
) -> None:
    image = node_images(cluster.ctx)["controller"].ref
    node = cluster.kube.get("node", NODE_NAME)
    assert any(t.get("effect") == "NoSchedule" for t in node["spec"].get("taints") or [])

    # The real node's own NoSchedule taint does not stop a Pod bound by name.
    cluster.kube.apply(bound_pod("past-noschedule", namespace, image))
    wait_for(
        lambda: phase(cluster, "past-noschedule", namespace)[0] == "Running",
        timeout=60,
        what="the nodeName Pod running past the NoSchedule taint",
    )

    taint = f"{keys.GANG_TAINT}=squatted:{keys.GANG_TAINT_EFFECT}"
    cluster.kube.run("taint", "node", NODE_NAME, taint)
    try:
        cluster.kube.apply(bound_pod("gang-node", namespace, image))

        def failed() -> tuple[str, str] | None:
            now = phase(cluster, "gang-node", namespace)
            return now if now[0] == "Failed" else None

        rejected = wait_for(failed, timeout=60, what="the kubelet rejecting the nodeName Pod")
        assert "Taint" in rejected[1], rejected  # the kubelet's admission reason
    finally:
        cluster.kube.run("taint", "node", NODE_NAME, f"{keys.GANG_TAINT}-", check=False)

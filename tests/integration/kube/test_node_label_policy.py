"""The chart's node-labels ValidatingAdmissionPolicy, as the real kube-apiserver evaluates
it: RBAC lets the controller patch Nodes, the policy lets that patch only add
``topology.k8s.aws/network-node-layer-<n>`` labels to gang nodes.

Each case is a server-side dry-run ``kubectl patch`` as the controller's ServiceAccount
(impersonated by the admin), which a ClusterRole here allows to patch Nodes, so every
denial is the policy's, not RBAC's.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from atomic_gang import keys as k
from atomic_gang_devstack.bins import Bins
from tests.integration.kube.conftest import ControlPlane
from tests.integration.kube.test_gang_node_policy import Kubectl, policy_docs
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube
LAYER = "topology.k8s.aws/network-node-layer-"
DENIED = "the provisioner may"


def _controller(docs: list[dict[str, Any]]) -> str:
    expression = docs[0]["spec"]["matchConditions"][0]["expression"]
    found = re.search(r'"(system:serviceaccount:[^"]+)"', expression)
    assert found, expression
    return found.group(1)


def _node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def _rbac(user: str) -> list[dict[str, Any]]:
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "node-label-policy-test"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "node-label-policy-test"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role["metadata"]["name"],
        },
        "subjects": [{"kind": "User", "name": user}],
    }
    return [role, binding]


@pytest.fixture(scope="module")
def setup(control_plane: ControlPlane) -> Iterator[tuple[Kubectl, str, str, str]]:
    bins = Bins.load()
    bins.ensure(("kubectl", "helm"))
    ctl = Kubectl(bins.path("kubectl"), control_plane.kubeconfig)
    docs = policy_docs("templates/node-label-policy.yaml")
    user = _controller(docs)
    tag = uuid.uuid4().hex[:6]
    gang, other = f"gang-{tag}", f"plain-{tag}"
    objects = [*docs, *_rbac(user), _node(gang, {k.MANAGED: "true"}), _node(other, {})]
    ctl.apply(*objects)

    def enforced() -> bool:
        done = _patch(ctl, user, gang, {"metadata": {"labels": {"team": "x"}}})
        return done.returncode != 0 and DENIED in done.stderr

    wait_for(enforced, timeout=30, what="the node-labels policy enforced")
    yield ctl, user, gang, other
    ctl.run("delete", "-f", "-", stdin=yaml.safe_dump_all(objects))


def _patch(
    ctl: Kubectl, user: str, node: str, patch: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    return ctl.run(
        "patch",
        "node",
        node,
        "--type=merge",
        "--dry-run=server",
        "-p",
        json.dumps(patch),
        user=user,
    )


def _labels(**labels: str | None) -> dict[str, Any]:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize(
    ("target", "patch", "allowed"),
    [
        pytest.param(
            "gang", _labels(**{LAYER + "1": "nn-a", LAYER + "3": "nn-c"}), True, id="layers"
        ),
        pytest.param("gang", _labels(**{k.POOL: "stolen"}), False, id="pool-label"),
        pytest.param("gang", _labels(**{k.MANAGED: None}), False, id="remove-managed"),
        pytest.param(
            "gang", _labels(**{"topology.k8s.aws/zone-id": "use1-az1"}), False, id="other-topology"
        ),
        pytest.param("gang", {"spec": {"unschedulable": True}}, False, id="cordon"),
        pytest.param("gang", {"metadata": {"annotations": {"a": "b"}}}, False, id="annotation"),
        pytest.param("plain", _labels(**{LAYER + "1": "nn-a"}), False, id="not-a-gang-node"),
    ],
)
def test_controller_may_only_add_layer_labels_to_gang_nodes(
    setup: tuple[Kubectl, str, str, str], target: str, patch: dict[str, Any], allowed: bool
) -> None:
    ctl, user, gang, other = setup
    done = _patch(ctl, user, gang if target == "gang" else other, patch)
    assert (done.returncode == 0) is allowed, done.stderr
    if not allowed:
        assert DENIED in done.stderr


def test_anyone_else_is_not_bound_by_it(setup: tuple[Kubectl, str, str, str]) -> None:
    ctl, _, gang, _ = setup
    done = ctl.run(
        "patch",
        "node",
        gang,
        "--type=merge",
        "--dry-run=server",
        "-p",
        json.dumps(_labels(team="x")),
    )
    assert done.returncode == 0, done.stderr

"""The chart's gang node ValidatingAdmissionPolicy, as the real kube-apiserver (v1.36.3)
evaluates it: who may create a Pod that tolerates the gang taint or selects a pool.

The policy is rendered from the chart with the pinned helm and applied; each case is a
server-side dry-run create (``dryRun=All``) by an impersonated user (the admin may
impersonate), so the API server's own authentication, RBAC and CEL decide. Tenants get
a Role to create and update Pods, so every denial here is the policy's, not RBAC's.
"""

from __future__ import annotations

import ssl
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from atomic_gang import keys as k
from atomic_gang_devstack.bins import Bins
from tests.integration.chart.render import CHART, KUBE_VERSION, REQUIRED
from tests.integration.kube.conftest import ControlPlane
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube
TENANT = "alice"
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
DS_CONTROLLER = "system:serviceaccount:kube-system:daemon-set-controller"
RS_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
KCM = "system:kube-controller-manager"
DENIED = "gang nodes belong to their gang"
# What Kueue merges into a gang pod: our podSetUpdate's toleration (no effect) and selectors.
TOLERATION = {"key": k.GANG_TAINT, "operator": "Equal", "value": "pool-a"}
PINNED = {k.POOL: "pool-a", k.GROUP: "pool-a-g1"}
AGENTS = "gnp-node-agents"  # the namespace gangNodePolicy.daemonSetNamespaces lists


@dataclass(frozen=True)
class Api:
    """Pod writes straight to the API server as an impersonated user."""

    http: httpx.Client

    def write(self, method: str, path: str, user: str, pod: dict[str, Any]) -> httpx.Response:
        headers = {"Impersonate-User": user, "Impersonate-Group": "system:authenticated"}
        return self.http.request(method, path, json=pod, headers=headers)


@dataclass(frozen=True)
class Kubectl:
    binary: Path
    kubeconfig: Path

    def run(self, *args: str, user: str = "", stdin: str = "") -> subprocess.CompletedProcess[str]:
        argv = [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args]
        if user:
            argv += [f"--as={user}", "--as-group=system:authenticated"]
        return subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=60, check=False
        )

    def apply(self, *docs: dict[str, Any]) -> None:
        done = self.run("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        assert done.returncode == 0, done.stderr


def policy_docs(
    template: str = "templates/gang-node-policy.yaml", values: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A chart template's objects, rendered with the pinned helm."""
    helm = Bins.load().path("helm")
    out = subprocess.run(
        [
            *(str(helm), "template", "agp", str(CHART), "--namespace", "atomic-gang-system"),
            *("--kube-version", KUBE_VERSION, "--show-only", template),
            *("--values", "-"),
        ],
        input=yaml.safe_dump({**REQUIRED, **(values or {})}),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def _tenant_rbac(ns: str) -> list[dict[str, Any]]:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "pods", "namespace": ns},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "update", "get"]}],
    }
    subjects = [{"kind": "User", "name": u} for u in (TENANT, KCM)] + [
        {"kind": "User", "name": RS_CONTROLLER}
    ]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "pods", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
        "subjects": subjects,
    }
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": ns},
    }
    return [role, binding, sa]


@pytest.fixture(scope="module")
def kubectl(control_plane: ControlPlane) -> Iterator[Kubectl]:
    bins = Bins.load()
    bins.ensure(("kubectl", "helm"))
    ctl = Kubectl(bins.path("kubectl"), control_plane.kubeconfig)
    docs = policy_docs(values={"gangNodePolicy": {"daemonSetNamespaces": [AGENTS]}})
    ctl.apply(*docs)
    yield ctl
    # The session's API server is shared with the other kube tests.
    ctl.run("delete", "-f", "-", stdin=yaml.safe_dump_all(docs))


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> Iterator[Api]:
    d = control_plane.ctx.pki_dir
    cert = (str(d / "client-admin.crt"), str(d / "client-admin.key"))
    ctx = ssl.create_default_context(cafile=str(control_plane.ctx.ca_file))
    ctx.load_cert_chain(*cert)
    with httpx.Client(base_url=control_plane.ctx.apiserver_url, verify=ctx, timeout=30) as c:
        yield Api(c)


@pytest.fixture(scope="module")
def agents(kubectl: Kubectl) -> str:
    """The namespace whose DaemonSets may run on gang nodes (a CNI's, a device plugin's)."""
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENTS}})
    kubectl.apply(*_tenant_rbac(AGENTS))
    return AGENTS


@pytest.fixture(scope="module")
def ns(kubectl: Kubectl, api: Api) -> str:
    name = f"gnp-{uuid.uuid4().hex[:8]}"
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    kubectl.apply(*_tenant_rbac(name))
    # The API server compiles a new policy in the background: wait until it is enforced.
    wait_for(
        lambda: DENIED in _create(api, name, TENANT, _pod(tolerations=[TOLERATION])).text,
        timeout=30,
        what="the policy enforced",
    )
    return name


def _owner(kind: str) -> list[dict[str, Any]]:
    api = {"Job": "batch/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1"}[kind]
    uid = str(uuid.uuid4())
    return [{"apiVersion": api, "kind": kind, "name": "owner", "uid": uid, "controller": True}]


def _pod(*, owner: str = "", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p-{uuid.uuid4().hex[:8]}"}
    if owner:
        meta["ownerReferences"] = _owner(owner)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"automountServiceAccountToken": False, "containers": [{"name": "c", "image": "i"}]}
        | spec,
    }


def _create(
    api: Api, ns: str, user: str, pod: dict[str, Any], *, dry_run: bool = True
) -> httpx.Response:
    query = "?dryRun=All" if dry_run else ""
    return api.write("POST", f"/api/v1/namespaces/{ns}/pods{query}", user, pod)


_AFFINITY = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1,
                "preference": {"matchExpressions": [{"key": k.GROUP, "operator": "Exists"}]},
            }
        ]
    }
}
# Each claim, as a pinned gang pod carries it (with the pool and group selected) and alone.
CLAIMS: dict[str, dict[str, Any]] = {
    "toleration": {"tolerations": [TOLERATION], "nodeSelector": PINNED},
    "toleration-noexecute": {
        "tolerations": [{**TOLERATION, "effect": "NoExecute"}],
        "nodeSelector": PINNED,
    },
    "toleration-before-noexecute": {
        "tolerations": [{**TOLERATION, "effect": "NoSchedule"}],
        "nodeSelector": PINNED,
    },
    "flavor-toleration": {
        "tolerations": [{"key": k.GANG_TAINT, "operator": "Exists"}],
        "nodeSelector": PINNED,
    },
    "tolerate-all": {"tolerations": [{"operator": "Exists"}], "nodeSelector": PINNED},
    "tolerate-all-noexecute": {
        "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
        "nodeSelector": PINNED,
    },
    "selector": {"nodeSelector": PINNED},
    "affinity": {"affinity": _AFFINITY, "nodeSelector": PINNED},
}
UNPINNED: dict[str, dict[str, Any]] = {
    "toleration-alone": {"tolerations": [TOLERATION]},
    "pool-without-group": {"tolerations": [TOLERATION], "nodeSelector": {k.POOL: "pool-a"}},
    "toleration-of-another-pool": {
        "tolerations": [{**TOLERATION, "value": "pool-b"}],
        "nodeSelector": PINNED,
    },
    "affinity-alone": {"affinity": _AFFINITY},
}


@pytest.mark.parametrize("claim", list(CLAIMS))
@pytest.mark.parametrize(
    ("user", "owner", "allowed"),
    [
        pytest.param(TENANT, "", False, id="tenant-bare-pod"),
        pytest.param(TENANT, "Job", False, id="tenant-forging-a-job-owner"),
        pytest.param(JOB_CONTROLLER, "Job", True, id="job-controller-for-a-job"),
        pytest.param(KCM, "Job", True, id="kcm-without-sa-credentials"),
        pytest.param(JOB_CONTROLLER, "", False, id="job-controller-no-owner"),
        pytest.param(RS_CONTROLLER, "ReplicaSet", False, id="deployment-pod"),
        pytest.param(DS_CONTROLLER, "DaemonSet", False, id="tenant-daemonset-pod"),
    ],
)
def test_who_may_create_a_pod_that_claims_gang_nodes(
    api: Api, ns: str, claim: str, user: str, owner: str, allowed: bool
) -> None:
    done = _create(api, ns, user, _pod(owner=owner, **CLAIMS[claim]))
    if allowed:
        assert done.status_code == 201, done.text
    else:
        assert done.status_code == 403, done.text
        assert "ValidatingAdmissionPolicy" in done.text
        assert DENIED in done.text
        assert f"requested by {user}" in done.text


@pytest.mark.parametrize("claim", list(UNPINNED))
def test_a_job_pod_must_be_pinned_to_one_pool_and_its_group(api: Api, ns: str, claim: str) -> None:
    done = _create(api, ns, JOB_CONTROLLER, _pod(owner="Job", **UNPINNED[claim]))
    assert done.status_code == 403, done.text
    assert DENIED in done.text


@pytest.mark.parametrize("claim", ["toleration", "tolerate-all", "flavor-toleration"])
def test_only_listed_namespaces_daemonsets_may_run_on_gang_nodes(
    api: Api, ns: str, agents: str, claim: str
) -> None:
    pod = _pod(owner="DaemonSet", tolerations=CLAIMS[claim]["tolerations"])
    assert _create(api, agents, DS_CONTROLLER, pod).status_code == 201
    denied = _create(api, ns, DS_CONTROLLER, pod)
    assert denied.status_code == 403, denied.text
    assert "gangNodePolicy.daemonSetNamespaces" in denied.text


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({}, id="plain"),
        pytest.param(
            {"tolerations": [{"operator": "Exists", "effect": "PreferNoSchedule"}]},
            id="prefer-no-schedule",
        ),
        pytest.param({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}, id="gpu"),
        pytest.param({"nodeSelector": {k.MANAGED: "true"}}, id="managed-label"),
    ],
)
def test_pods_that_do_not_claim_gang_nodes_pass(api: Api, ns: str, spec: dict[str, Any]) -> None:
    done = _create(api, ns, TENANT, _pod(**spec))
    assert done.status_code == 201, done.text


def _replace(api: Api, ns: str, pod: dict[str, Any]) -> httpx.Response:
    path = f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}"
    return api.write("PUT", path, TENANT, pod)


def test_an_update_may_not_add_a_claim_to_a_gang_pod(api: Api, ns: str) -> None:
    made = _create(
        api, ns, JOB_CONTROLLER, _pod(owner="Job", **CLAIMS["toleration"]), dry_run=False
    )
    assert made.status_code == 201, made.text
    live = made.json()
    live["metadata"]["labels"] = {"team": "ml"}
    relabelled = _replace(api, ns, live)
    assert relabelled.status_code == 200, relabelled.text  # the placement is unchanged
    live = relabelled.json()
    live["spec"]["tolerations"].append({"operator": "Exists"})  # tolerations may only grow
    grown = _replace(api, ns, live)
    assert grown.status_code == 403
    assert DENIED in grown.text

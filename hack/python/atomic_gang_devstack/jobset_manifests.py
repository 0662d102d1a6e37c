"""JobSet's install manifests for running its controller outside the cluster.

Read from the module's ``config/components`` (the kustomize tree its release
manifests are built from): the CRD from ``crd/bases``, the manager's ClusterRole,
and the webhook configurations with their kustomize patches applied and every
webhook pointed at a URL on 127.0.0.1. Names follow ``config/default``: namespace
``jobset-system``, prefix ``jobset-``, so the controller's identity is the one a
release install gives it (:data:`USERNAME`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from atomic_gang_devstack import kueue_manifests as km

NAMESPACE = "jobset-system"
PREFIX = "jobset-"  # config/default's namePrefix
SERVICE_ACCOUNT = f"{PREFIX}controller-manager"
# Who the JobSet controller's requests come from: the user that creates a JobSet's Jobs.
USERNAME = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}")
CRD_NAME = "jobsets.jobset.x-k8s.io"
CLUSTER_ROLE = f"{PREFIX}manager-role"
# The JobSet webhook paths the manager serves once its webhooks are set up, each with an
# operation its handler allows without reading an object (controller-runtime's defaulter
# skips DELETE, its validator CONNECT): a readiness probe that logs no error.
JOBSET_WEBHOOK_PROBES = {
    "/mutate-jobset-x-k8s-io-v1alpha2-jobset": "DELETE",
    "/validate-jobset-x-k8s-io-v1alpha2-jobset": "CONNECT",
}

Obj = dict[str, Any]


def _components(src: Path) -> Path:
    return src / "config" / "components"


def _docs(path: Path) -> list[Obj]:
    return [
        d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader) if d
    ]


def crds(src: Path) -> list[Obj]:
    """Every CRD of ``config/components/crd/bases`` (JobSet's one)."""
    bases = sorted((_components(src) / "crd" / "bases").glob("*.yaml"))
    return [d for p in bases for d in _docs(p) if d.get("kind") == "CustomResourceDefinition"]


def rbac(src: Path) -> list[Obj]:
    """The namespace, the manager's ServiceAccount, its ClusterRole (``rbac/role.yaml``,
    the rules the controller really needs) and the binding between them. Leader election
    is off and certificates are ours, so the lease and secret roles are left out."""
    (role,) = _docs(_components(src) / "rbac" / "role.yaml")
    role["metadata"] = {"name": CLUSTER_ROLE}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE},
        },
        role,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{PREFIX}manager-rolebinding"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": CLUSTER_ROLE,
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
            ],
        },
    ]


def webhooks(src: Path, *, base_url: str, ca_pem: bytes) -> list[Obj]:
    """The mutating and validating webhook configurations of ``webhook/manifests.yaml``
    with the patches of ``webhook/kustomization.yaml`` applied (the Pod webhooks' object
    selector), renamed with the prefix and pointed at ``base_url``."""
    wh = _components(src) / "webhook"
    docs = _docs(wh / "manifests.yaml")
    kustomization = yaml.safe_load((wh / "kustomization.yaml").read_text(encoding="utf-8"))
    for patch in kustomization.get("patches") or []:
        target = patch["target"]
        doc = next(
            d
            for d in docs
            if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]
        )
        json_patch(doc, yaml.safe_load((wh / patch["path"]).read_text(encoding="utf-8")))
    for doc in docs:
        doc["metadata"]["name"] = PREFIX + doc["metadata"]["name"]
    return km.point_at(docs, base_url=base_url, ca_pem=ca_pem)


def json_patch(doc: Obj, ops: Iterable[Obj]) -> None:
    """Apply RFC 6902 ``add``/``replace``/``remove`` operations to ``doc`` in place; any
    other operation is refused, so a JobSet version whose patches need more fails here."""
    for op in ops:
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
        ]
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        kind = op["op"]
        if kind not in ("add", "replace", "remove"):
            raise ValueError(f"unsupported JSON patch operation {kind!r} at {op['path']}")
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if kind == "add":
                node.insert(index, op["value"])
            elif kind == "replace":
                node[index] = op["value"]
            else:
                del node[index]
        elif kind == "remove":
            del node[last]
        else:
            node[last] = op["value"]


def probe_review(operation: str) -> Obj:
    """An AdmissionReview for :data:`JOBSET_WEBHOOK_PROBES`."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "devstack-probe",
            "operation": operation,
            "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
            "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
        },
    }


def manager_config(
    *, health_port: int, webhook_port: int, cert_dir: Path, qps: int | None = None
) -> Obj:
    """JobSet's ``config.jobset.x-k8s.io/v1alpha1`` Configuration for a local manager:
    internal cert management off (its rotator would write under /tmp and serve a
    Service name), our certificate in ``cert_dir``, no leader election, no metrics."""
    return {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0", "certDir": str(cert_dir)},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        **({"clientConnection": {"qps": qps, "burst": 2 * qps}} if qps else {}),
    }

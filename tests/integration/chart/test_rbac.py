"""Least-privilege RBAC: exactly what the provisioner calls, leases in one namespace only."""

from __future__ import annotations

from tests.integration.chart.render import NAMESPACE, RELEASE, Rendered

# (apiGroup, resource) -> verbs; mirrors the README's RBAC table.
CLUSTER_RULES = {
    ("kueue.x-k8s.io", "workloads"): {"get", "list", "watch"},
    ("kueue.x-k8s.io", "workloads/status"): {"get", "patch"},
    ("kueue.x-k8s.io", "admissionchecks"): {"get", "list", "watch"},
    ("kueue.x-k8s.io", "admissionchecks/status"): {"get", "patch"},
    ("kueue.x-k8s.io", "resourceflavors"): {"get", "list", "watch"},
    ("atomic-gang.k8s.aws", "gangnodepools"): {"get", "list", "watch", "create", "patch"},
    ("atomic-gang.k8s.aws", "gangnodepools/status"): {"get", "update", "patch"},
    ("atomic-gang.k8s.aws", "gangnodepools/finalizers"): {"update"},
    ("", "nodes"): {"get", "list", "watch"},
    ("batch", "jobs"): {"get", "list", "watch"},
    ("", "events"): {"create", "patch"},
}
LEASE_RULES = {("coordination.k8s.io", "leases"): {"get", "list", "watch", "create", "update"}}


def _rules(role: dict[str, object]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:  # type: ignore[attr-defined]
        assert "resourceNames" not in rule
        assert "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for res in rule["resources"]:
                out.setdefault((group, res), set()).update(rule["verbs"])
    return out


def test_cluster_role_is_exactly_what_the_provisioner_uses(default: Rendered) -> None:
    rules = _rules(default.one("ClusterRole"))

    assert rules == CLUSTER_RULES
    everything = {v for verbs in rules.values() for v in verbs}
    assert not everything & {"*", "delete", "deletecollection", "escalate", "bind", "impersonate"}


def test_leases_only_in_the_release_namespace(default: Rendered) -> None:
    role = default.one("Role")
    binding = default.one("RoleBinding")

    assert role["metadata"]["namespace"] == NAMESPACE
    assert _rules(role) == LEASE_RULES
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_lease_role_follows_the_lease_namespace(renders: dict[str, Rendered]) -> None:
    assert renders["custom"].one("Role")["metadata"]["namespace"] == "leases"


def test_bindings_name_only_the_controller_account(default: Rendered) -> None:
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        assert default.one(kind)["subjects"] == [
            {"kind": "ServiceAccount", "name": "atomic-gang-controller", "namespace": NAMESPACE}
        ]
    webhook_sa = default.one("ServiceAccount", f"{RELEASE}-webhook")
    assert webhook_sa["automountServiceAccountToken"] is False

"""Least-privilege RBAC: exactly what the provisioner calls, leases in one namespace only.

The rules below are stated once more here on purpose (a chart change must be
deliberate), and the three RBAC tables of docs/operations.md are read and held to them.
"""

from __future__ import annotations

import re

from atomic_gang_devstack.bins import REPO_ROOT
from tests.integration.chart.render import NAMESPACE, RELEASE, Rendered

Rules = dict[tuple[str, str], set[str]]

# (apiGroup, resource) -> verbs; the RBAC tables of docs/operations.md must say the same.
CLUSTER_RULES = {
    ("kueue.x-k8s.io", "workloads"): {"get", "list", "watch"},
    ("kueue.x-k8s.io", "workloads/status"): {"get", "patch"},
    ("kueue.x-k8s.io", "admissionchecks"): {"get", "list", "watch"},
    ("kueue.x-k8s.io", "admissionchecks/status"): {"get", "patch"},
    ("kueue.x-k8s.io", "resourceflavors"): {"get", "list", "watch"},
    ("atomic-gang.k8s.aws", "gangnodepools"): {"get", "list", "watch", "create", "patch"},
    ("atomic-gang.k8s.aws", "gangnodepools/status"): {"get", "update", "patch"},
    ("atomic-gang.k8s.aws", "gangnodepools/finalizers"): {"update"},
    ("", "nodes"): {"get", "list", "watch", "patch"},
    ("batch", "jobs"): {"get", "list", "watch"},
    ("jobset.x-k8s.io", "jobsets"): {"get", "list", "watch"},
    ("trainer.kubeflow.org", "trainjobs"): {"get", "list", "watch"},
    ("", "events"): {"create", "patch"},
    # /metrics: who holds a scraper's token, and may that user read it?
    ("authentication.k8s.io", "tokenreviews"): {"create"},
    ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
}
LEASE_RULES = {("coordination.k8s.io", "leases"): {"get", "list", "watch", "create", "update"}}
# kube-system only, and only the object named aws-auth (resourceNames).
AWS_AUTH_RULES = {("", "configmaps"): {"get"}}
_ROW = re.compile(r"\| (`[^`]*`|core) \| `([^`]+)` \| ([a-z, ]+?)(?: \(.*\))? \|")


def _rules(role: dict[str, object], *, names: list[str] | None = None) -> Rules:
    out: Rules = {}
    for rule in role["rules"]:  # type: ignore[attr-defined]
        assert rule.get("resourceNames") == names
        assert "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for res in rule["resources"]:
                out.setdefault((group, res), set()).update(rule["verbs"])
    return out


def test_cluster_role_is_exactly_what_the_provisioner_uses(default: Rendered) -> None:
    rules = _rules(default.one("ClusterRole", f"{RELEASE}-controller"))

    assert rules == CLUSTER_RULES
    everything = {v for verbs in rules.values() for v in verbs}
    assert not everything & {"*", "delete", "deletecollection", "escalate", "bind", "impersonate"}


def test_leases_only_in_the_release_namespace(default: Rendered) -> None:
    role = default.one("Role", "-leader-election")
    binding = default.one("RoleBinding", "-leader-election")

    assert role["metadata"]["namespace"] == NAMESPACE
    assert _rules(role) == LEASE_RULES
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_lease_role_follows_the_lease_namespace(renders: dict[str, Rendered]) -> None:
    assert renders["custom"].one("Role", "-leader-election")["metadata"]["namespace"] == "leases"


def test_aws_auth_is_read_as_one_object_in_kube_system(default: Rendered) -> None:
    role = default.one("Role", "-aws-auth")
    binding = default.one("RoleBinding", "-aws-auth")

    assert role["metadata"]["namespace"] == "kube-system"
    assert _rules(role, names=["aws-auth"]) == AWS_AUTH_RULES
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_bindings_name_only_the_controller_account(default: Rendered) -> None:
    bindings = [default.one("ClusterRoleBinding"), *default.of("RoleBinding")]
    assert len(bindings) == 3
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "atomic-gang-controller", "namespace": NAMESPACE}
        ]
    webhook_sa = default.one("ServiceAccount", f"{RELEASE}-webhook")
    assert webhook_sa["automountServiceAccountToken"] is False


OPERATIONS = REPO_ROOT / "docs" / "operations.md"


def documented_rbac_tables(doc: str) -> list[Rules]:
    """The tables of the ``## RBAC`` section of docs/operations.md, in order (``core`` is
    the "" group)."""
    section = doc.split("\n## RBAC\n", 1)[1].split("\n#", 1)[0]
    tables: list[Rules] = []
    previous_was_row = False
    for line in section.splitlines():
        is_row = line.startswith("|")
        if is_row and not previous_was_row:
            tables.append({})
        previous_was_row = is_row
        if not is_row or line.startswith(("| API group", "|---")):
            continue
        m = _ROW.fullmatch(line)
        assert m, f"docs/operations.md RBAC row not understood: {line!r}"
        group = "" if m.group(1) == "core" else m.group(1).strip("`")
        verbs = {v.strip() for v in m.group(3).split(",")}
        assert (group, m.group(2)) not in tables[-1], line
        tables[-1][(group, m.group(2))] = verbs
    return tables


def test_documented_rbac_tables_are_the_charts_rules() -> None:
    doc = OPERATIONS.read_text(encoding="utf-8")

    assert documented_rbac_tables(doc) == [CLUSTER_RULES, LEASE_RULES, AWS_AUTH_RULES]


def test_rbac_table_reader_sees_a_drifted_row() -> None:
    doc = OPERATIONS.read_text(encoding="utf-8")
    row = "| `batch` | `jobs` | get, list, watch |"
    assert row in doc

    drifted = documented_rbac_tables(doc.replace(row, "| `batch` | `jobs` | get, list |"))

    assert drifted[0][("batch", "jobs")] == {"get", "list"}
    assert drifted != [CLUSTER_RULES, LEASE_RULES, AWS_AUTH_RULES]

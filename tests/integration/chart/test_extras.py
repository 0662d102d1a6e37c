"""Optional pieces: ServiceMonitors, the NetworkPolicies (on by default) and the elevated
nodeBootstrap hook."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from atomic_gang_provisioner.cloud.naming import instance_profile_name
from tests.integration.chart.conftest import LONG_CLUSTER
from tests.integration.chart.render import NAMESPACE, RELEASE, Rendered

ROLES = (
    "arn:aws:iam::123456789012:role/eks-gang-node-role",
    "arn:aws:iam::123456789012:role/team/second",
)


def test_service_monitors_scrape_both_services(renders: dict[str, Rendered]) -> None:
    r = renders["extras"]
    monitors = {m["metadata"]["name"]: m["spec"] for m in r.of("ServiceMonitor")}
    services = {s["metadata"]["name"]: s["spec"] for s in r.of("Service")}

    controller = monitors[f"{RELEASE}-controller"]
    webhook = monitors[f"{RELEASE}-webhook"]
    assert controller["endpoints"][0]["port"] == "http"
    assert (
        services[f"{RELEASE}-controller-metrics"]["selector"]
        == (controller["selector"]["matchLabels"])
    )
    assert webhook["endpoints"][0]["scheme"] == "https"
    assert webhook["endpoints"][0]["tlsConfig"]["serverName"] == (
        f"{RELEASE}-webhook.{NAMESPACE}.svc"
    )
    assert "ServiceMonitor" not in renders["default"].kinds


def test_node_bootstrap_hook_uses_the_controllers_profile_names(
    renders: dict[str, Rendered],
) -> None:
    r = renders["extras"]
    job = r.one("Job", "-node-bootstrap")
    script = job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    names = [instance_profile_name(cluster=LONG_CLUSTER, node_role_arn=arn) for arn in ROLES]

    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert any(len(n) == 128 for n in names), "the test must cover the hashed form"
    for arn, name in zip(ROLES, names, strict=True):
        assert f'ensure "{arn}" "{arn.rsplit("/", 1)[1]}" "{name}"' in script
    assert "--type EC2_LINUX" in script
    assert "Job" not in renders["default"].kinds


def test_a_100_character_eks_name_with_underscores_renders_and_names_profiles_as_the_controller(
    renders: dict[str, Rendered],
) -> None:
    cluster = "My_Cluster-" + "x" * 89
    r = renders["eks-names"]
    assert r.returncode == 0, r.stderr
    settings = yaml.safe_load(r.one("ConfigMap", "-settings")["data"]["settings.yaml"])
    assert settings["clusterName"] == cluster
    script = r.one("Job", "-node-bootstrap")["spec"]["template"]["spec"]["containers"][0]["args"][0]
    name = instance_profile_name(cluster=cluster, node_role_arn=ROLES[0])
    assert len(name) == 128
    assert f'"{name}"' in script


def test_controller_metrics_need_a_reader_token_by_default(renders: dict[str, Rendered]) -> None:
    default = renders["default"]
    (env,) = [
        e
        for e in default.one("Deployment", "-controller")["spec"]["template"]["spec"]["containers"][
            0
        ]["env"]
        if e["name"] == "ATOMIC_GANG_PROVISIONER_METRICS_AUTH"
    ]
    assert env["value"] == "kubernetes"
    reader = default.one("ClusterRole", "-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    # Bound to nobody until the values name the scrapers.
    assert not [b for b in default.of("ClusterRoleBinding") if "metrics" in b["metadata"]["name"]]


def test_metrics_readers_are_bound_and_the_monitor_sends_its_token(
    renders: dict[str, Rendered],
) -> None:
    r = renders["metrics-readers"]
    binding = r.one("ClusterRoleBinding", "-metrics-reader")
    assert binding["roleRef"]["name"] == f"{RELEASE}-controller-metrics-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"},
        {"kind": "Group", "name": "sre", "apiGroup": "rbac.authorization.k8s.io"},
    ]
    (endpoint,) = r.one("ServiceMonitor", "-controller")["spec"]["endpoints"]
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"


def test_open_metrics_drop_the_reader_role_and_the_review_rights(
    renders: dict[str, Rendered],
) -> None:
    r = renders["metrics-open"]
    assert [o["metadata"]["name"] for o in r.of("ClusterRole")] == [f"{RELEASE}-controller"]
    groups = {g for rule in r.one("ClusterRole")["rules"] for g in rule["apiGroups"]}
    assert not groups & {"authentication.k8s.io", "authorization.k8s.io"}
    (endpoint,) = r.one("ServiceMonitor", "-controller")["spec"]["endpoints"]
    assert "bearerTokenFile" not in endpoint


def _named(*namespaces: str) -> dict[str, Any]:
    expr = {"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(namespaces)}
    return {"namespaceSelector": {"matchExpressions": [expr]}}


def test_network_policies_are_on_by_default(default: Rendered) -> None:
    controller = default.one("NetworkPolicy", "-controller")["spec"]
    webhook = default.one("NetworkPolicy", "-webhook")["spec"]

    # The metrics port from the monitoring namespace only; no pod reaches the probe port
    # (the kubelet probes from the pod's own node, which no NetworkPolicy applies to).
    assert controller["ingress"] == [
        {"from": [_named("monitoring")], "ports": [{"port": 8080, "protocol": "TCP"}]}
    ]
    assert webhook["ingress"] == [{"ports": [{"port": 9443, "protocol": "TCP"}]}]
    assert webhook["egress"] == []


def test_network_policy_admits_the_controller_port_only_from_the_named_scrapers(
    renders: dict[str, Rendered],
) -> None:
    policy = renders["metrics-readers"].one("NetworkPolicy", "-controller")
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert rule["from"] == [_named("monitoring", "obs"), {"ipBlock": {"cidr": "10.0.0.0/16"}}]
    # No scraper named: no pod may connect (the kubelet's probes come from the node).
    closed = renders["metrics-open"].one("NetworkPolicy", "-controller")
    assert closed["spec"]["ingress"] == []


def test_probe_from_admits_the_named_nodes_to_the_probe_port_only(
    renders: dict[str, Rendered],
) -> None:
    r = renders["probes-from-nodes"]
    scrapes, probes = r.one("NetworkPolicy", "-controller")["spec"]["ingress"]
    assert scrapes["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert probes == {
        "from": [{"ipBlock": {"cidr": "10.1.0.0/16"}}],
        "ports": [{"port": 9090, "protocol": "TCP"}],
    }
    ctl = r.one("Deployment", "-controller")["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "health", "containerPort": 9090, "protocol": "TCP"} in ctl["ports"]


@pytest.mark.parametrize(
    ("case", "credentials"),
    [
        pytest.param("default", ["169.254.170.23/32", "fd00:ec2::23/128"], id="podIdentity"),
        pytest.param("node", ["169.254.169.254/32", "fd00:ec2::254/128"], id="node"),
        pytest.param("irsa", None, id="irsa"),
        pytest.param("static", None, id="static"),
    ],
)
def test_the_controller_may_reach_its_credentials_on_the_node(
    renders: dict[str, Rendered], case: str, credentials: list[str] | None
) -> None:
    egress = renders[case].one("NetworkPolicy", "-controller")["spec"]["egress"]
    http = [rule for rule in egress if {"port": 80, "protocol": "TCP"} in rule["ports"]]
    if credentials is None:  # STS over HTTPS (irsa), or keys in a Secret (static)
        assert http == []
    else:
        assert http == [
            {
                "to": [{"ipBlock": {"cidr": cidr}} for cidr in credentials],
                "ports": [{"port": 80, "protocol": "TCP"}],
            }
        ]


def test_each_auth_mode_reaches_the_node_bootstrap_hook(renders: dict[str, Rendered]) -> None:
    static = renders["static-bootstrap"]
    hook = static.one("Job", "-node-bootstrap")["spec"]["template"]["spec"]["containers"][0]
    assert hook["envFrom"] == [{"secretRef": {"name": "aws-keys"}}]
    irsa = renders["irsa-bootstrap"]
    account = irsa.one("ServiceAccount", "-node-bootstrap")
    annotations = account["metadata"]["annotations"]
    assert annotations["eks.amazonaws.com/role-arn"] == "arn:aws:iam::123456789012:role/bootstrap"
    hook = irsa.one("Job", "-node-bootstrap")["spec"]["template"]["spec"]["containers"][0]
    assert "envFrom" not in hook


def test_irsa_with_an_existing_service_account_needs_no_role_in_the_values(
    renders: dict[str, Rendered],
) -> None:
    r = renders["irsa-existing-sa"]
    assert r.returncode == 0, r.stderr
    assert [a["metadata"]["name"] for a in r.of("ServiceAccount")] == [f"{RELEASE}-webhook"]

"""Optional pieces: ServiceMonitors and the elevated nodeBootstrap hook."""

from __future__ import annotations

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

"""What a default install creates: workloads, labels, security, probes, PDBs, NOTES."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.chart.render import NAMESPACE, RELEASE, Rendered

CLUSTER_SCOPED = {
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "AdmissionCheck",
    "ResourceFlavor",
    "ClusterQueue",
}
STANDARD_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/component",
    "app.kubernetes.io/part-of",
    "helm.sh/chart",
)


def _container(deploy: dict[str, Any]) -> dict[str, Any]:
    containers = deploy["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_default_install_creates_every_piece(default: Rendered) -> None:
    twice = ["Certificate", "Deployment", "Issuer", "NetworkPolicy", "PodDisruptionBudget"]
    twice += ["Service"]
    once = ["AdmissionCheck", "ClusterQueue", "ClusterRoleBinding", "ConfigMap"]
    once += ["LocalQueue", "ResourceFlavor", "ServiceAccount", "ServiceAccount"]
    once += ["ValidatingWebhookConfiguration"]
    twice += ["Role", "RoleBinding"]  # the Lease's, and kube-system/aws-auth's
    twice += ["ClusterRole"]  # the controller's, and the one reading its /metrics
    # The gang-nodes policy, and the node-labels one that bounds the controller's patch.
    twice += ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]

    assert default.kinds == sorted(once + twice * 2)


def test_every_object_has_the_standard_labels_and_its_namespace(default: Rendered) -> None:
    for obj in default.objects:
        meta = obj["metadata"]
        missing = [k for k in STANDARD_LABELS if k not in meta.get("labels", {})]
        assert not missing, f"{obj['kind']}/{meta['name']} lacks {missing}"
        assert meta["labels"]["app.kubernetes.io/instance"] == RELEASE
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in meta
        elif meta["name"].endswith("-aws-auth"):
            assert meta["namespace"] == "kube-system"
        elif obj["kind"] != "LocalQueue":
            assert meta["namespace"] == NAMESPACE, obj["kind"]


def test_controller_deployment(default: Rendered) -> None:
    deploy = default.one("Deployment", "-controller")
    pod = deploy["spec"]["template"]["spec"]
    c = _container(deploy)
    env = _env(c)

    assert deploy["spec"]["replicas"] == 2
    assert pod["serviceAccountName"] == "atomic-gang-controller"
    assert pod["enableServiceLinks"] is False  # no <SVC>_SERVICE_HOST among strict settings
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["ATOMIC_GANG_PROVISIONER_NAMESPACE"] == {
        "fieldRef": {"fieldPath": "metadata.namespace"}
    }
    assert env["ATOMIC_GANG_PROVISIONER_HTTP_PORT"] == "8080"
    assert env["ATOMIC_GANG_PROVISIONER_HEALTH_PORT"] == "8081"
    assert env["AWS_REGION"] == "us-east-1"
    assert c["args"] == ["--config", "/etc/atomic-gang/settings.yaml"]
    assert c["ports"] == [
        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
        {"name": "health", "containerPort": 8081, "protocol": "TCP"},
    ]
    # Every probe on the probes' own port: connections held on /metrics cannot fail them.
    assert c["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert c["image"] == "atomic-gang-provisioner:0.1.0"
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts == {"/etc/atomic-gang": "settings", "/tmp": "tmp"}


def test_webhook_deployment_and_service(default: Rendered) -> None:
    deploy = default.one("Deployment", "-webhook")
    pod = deploy["spec"]["template"]["spec"]
    c = _container(deploy)
    env = _env(c)
    svc = default.one("Service", "-webhook")

    assert deploy["spec"]["replicas"] == 2
    assert pod["automountServiceAccountToken"] is False
    # Found on the real node: release atomic-gang's Service links are ATOMIC_GANG_WEBHOOK_*.
    assert pod["enableServiceLinks"] is False
    assert c["image"] == "atomic-gang-provisioner-webhook:0.1.0"
    assert env["ATOMIC_GANG_WEBHOOK_PORT"] == "9443"
    assert (env["ATOMIC_GANG_WEBHOOK_CERT_FILE"], env["ATOMIC_GANG_WEBHOOK_KEY_FILE"]) == (
        "/tls/tls.crt",
        "/tls/tls.key",
    )
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert svc["spec"]["ports"] == [
        {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}
    ]
    assert c["ports"][0] == {"name": "https", "containerPort": 9443, "protocol": "TCP"}
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in svc["spec"]["selector"].items())


def test_pods_run_non_root_with_a_read_only_root(default: Rendered) -> None:
    for deploy in default.of("Deployment"):
        pod = deploy["spec"]["template"]["spec"]
        sc = _container(deploy)["securityContext"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        # Python needs a writable /tmp: an emptyDir, not the image.
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert "emptyDir" in volumes["tmp"]


def test_pdbs_cover_both_deployments(default: Rendered) -> None:
    pdbs = {p["metadata"]["name"]: p["spec"] for p in default.of("PodDisruptionBudget")}
    for deploy in default.of("Deployment"):
        spec = pdbs[deploy["metadata"]["name"]]
        assert spec["minAvailable"] == 1
        assert spec["selector"]["matchLabels"] == deploy["spec"]["selector"]["matchLabels"]


def test_settings_change_rolls_the_pods(renders: dict[str, Rendered]) -> None:
    def checksum(r: Rendered, suffix: str) -> str:
        tpl = r.one("Deployment", suffix)["spec"]["template"]["metadata"]
        return str(tpl["annotations"]["checksum/settings"])

    for suffix in ("-controller", "-webhook"):
        assert checksum(renders["default"], suffix) != checksum(renders["custom"], suffix)


def test_auth_modes(renders: dict[str, Rendered]) -> None:
    def sa(name: str) -> dict[str, Any]:
        return renders[name].one("ServiceAccount", "atomic-gang-controller")

    assert "annotations" not in sa("default")["metadata"]  # podIdentity: out of band
    assert sa("irsa")["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/ctl"
    }
    static = _container(renders["static"].one("Deployment", "-controller"))
    assert static["envFrom"] == [{"secretRef": {"name": "aws-keys"}}]
    assert "envFrom" not in _container(renders["default"].one("Deployment", "-controller"))


def test_auth_mode_node_leaves_the_default_credential_chain_alone(
    renders: dict[str, Rendered],
) -> None:
    """auth.mode=node: no role annotation, no key Secret, no credential variable, so
    boto3's default chain reaches the node's instance role through IMDS."""
    r = renders["node"]
    assert r.returncode == 0, r.stderr
    assert "annotations" not in r.one("ServiceAccount", "atomic-gang-controller")["metadata"]
    ctl = _container(r.one("Deployment", "-controller"))
    assert "envFrom" not in ctl
    aws = {e["name"] for e in ctl["env"] if e["name"].startswith("AWS_")}
    assert aws == {"AWS_REGION", "AWS_STS_REGIONAL_ENDPOINTS"}


def test_optional_pieces_switch_off(renders: dict[str, Rendered]) -> None:
    r = renders["no-webhook-no-le"]
    kinds = set(r.kinds)

    assert not kinds & {"ValidatingWebhookConfiguration", "Certificate", "Issuer"}
    assert [o["metadata"]["name"] for o in r.of("Role")] == [f"{RELEASE}-controller-aws-auth"]
    assert "PodDisruptionBudget" not in kinds
    assert "NetworkPolicy" not in kinds
    assert [d["metadata"]["name"] for d in r.of("Deployment")] == [f"{RELEASE}-controller"]
    assert r.of("ServiceAccount") == []  # serviceAccount.create=false
    pod = r.one("Deployment", "-controller")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "pre-made"
    # One active replica without leader election: never two at once during an upgrade.
    assert r.one("Deployment", "-controller")["spec"]["strategy"] == {"type": "Recreate"}


def test_with_leader_election_upgrades_roll(default: Rendered) -> None:
    assert "strategy" not in default.one("Deployment", "-controller")["spec"]  # RollingUpdate


@pytest.mark.parametrize("suffix", ["-controller", "-webhook"])
def test_probes_tolerate_a_node_short_of_cpu(default: Rendered, suffix: str) -> None:
    c = _container(default.one("Deployment", suffix))
    # kubelet's default timeout (1 s) turns a starved node's slow answers into restarts.
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert c[probe]["timeoutSeconds"] >= 5, probe
    start = c["startupProbe"]
    assert start["periodSeconds"] * start["failureThreshold"] >= 120  # liveness waits for it

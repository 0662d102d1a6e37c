"""The webhook registration and its certificate in every certMode (and with devUrl)."""

from __future__ import annotations

import base64
import ipaddress
from typing import Any

from cryptography import x509

from tests.integration.chart.render import NAMESPACE, RELEASE, Rendered

SVC = f"{RELEASE}-webhook"
SVC_DNS = f"{SVC}.{NAMESPACE}.svc"
PATH = "/validate/batch/v1/job"


HOOKS = [
    "jobs.atomic-gang.k8s.aws",
    "jobsets.atomic-gang.k8s.aws",
    "trainjobs.atomic-gang.k8s.aws",
    "trainingruntimes.atomic-gang.k8s.aws",
]
OURS = "'atomic-gang.k8s.aws/'"  # how the match conditions test our keys' prefix


def _hooks(r: Rendered) -> list[dict[str, Any]]:
    hooks = r.one("ValidatingWebhookConfiguration")["webhooks"]
    assert [h["name"] for h in hooks] == HOOKS
    return [dict(h) for h in hooks]


def _hook(r: Rendered) -> dict[str, Any]:
    """The Jobs entry (the others differ only in their rule and match condition)."""
    jobs, *others = _hooks(r)
    for other in others:
        assert {k: v for k, v in jobs.items() if k not in ("name", "rules", "matchConditions")} == {
            k: v for k, v in other.items() if k not in ("name", "rules", "matchConditions")
        }
    return jobs


def _tls_volume(r: Rendered) -> str:
    pod = r.one("Deployment", "-webhook")["spec"]["template"]["spec"]
    (tls,) = [v for v in pod["volumes"] if v["name"] == "tls"]
    return str(tls["secret"]["secretName"])


def test_registration_fails_closed_on_jobs_only(default: Rendered) -> None:
    hook = _hook(default)

    assert hook["name"] == "jobs.atomic-gang.k8s.aws"
    assert hook["failurePolicy"] == "Fail"
    assert hook["sideEffects"] == "None"
    assert hook["timeoutSeconds"] == 5
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["rules"] == [
        {
            "apiGroups": ["batch"],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["jobs"],
            "scope": "Namespaced",
        }
    ]
    assert hook["clientConfig"]["service"] == {
        "name": SVC,
        "namespace": NAMESPACE,
        "path": PATH,
        "port": 443,
    }
    (expr,) = hook["namespaceSelector"]["matchExpressions"]
    assert (expr["key"], expr["operator"]) == ("kubernetes.io/metadata.name", "NotIn")
    for ns in ("kube-system", "kube-public", "kube-node-lease", NAMESPACE, "kueue-system"):
        assert ns in expr["values"]
    # Only Jobs carrying our keys (now or before the UPDATE) are sent.
    (cond,) = hook["matchConditions"]
    assert cond["expression"].count(OURS) == 4
    assert "oldObject" in cond["expression"]


def test_jobsets_are_registered_with_the_same_endpoint_and_fail_closed(default: Rendered) -> None:
    _, hook, *_ = _hooks(default)
    assert hook["rules"] == [
        {
            "apiGroups": ["jobset.x-k8s.io"],
            "apiVersions": ["v1alpha2"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["jobsets"],
            "scope": "Namespaced",
        }
    ]
    assert hook["failurePolicy"] == "Fail"
    (cond,) = hook["matchConditions"]
    assert cond["expression"].count(OURS) == 4
    # The replicatedJobs' pod templates are where a JobSet reaches for gang nodes.
    assert (
        "object.spec.?replicatedJobs.orValue([]).exists(rj, rj.?template.?spec.?template.?spec"
        in (cond["expression"])
    )


def test_trainjobs_are_registered_with_the_same_endpoint_and_fail_closed(
    default: Rendered,
) -> None:
    _, _, hook, _ = _hooks(default)
    assert hook["rules"] == [
        {
            "apiGroups": ["trainer.kubeflow.org"],
            "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["trainjobs"],
            "scope": "Namespaced",
        }
    ]
    assert hook["failurePolicy"] == "Fail"
    (cond,) = hook["matchConditions"]
    expr = cond["expression"]
    # Our keys on the TrainJob (4, old and new) and in a patch's JobSet metadata (2).
    assert expr.count(OURS) == 6
    assert "oldObject" in expr
    # The runtime patches' pod templates are where a TrainJob reaches for gang nodes.
    assert (
        "object.?spec.?runtimePatches.orValue([]).exists(rp, rp.?trainingRuntimeSpec.?template"
        ".?spec.?replicatedJobs.orValue([]).exists(rj, rj.?template.?spec.?template.?spec"
    ) in expr
    assert "rp.?trainingRuntimeSpec.?template.?metadata.?labels" in expr


def test_runtimes_are_registered_cluster_wide_on_their_templates_only(default: Rendered) -> None:
    """A TrainingRuntime (namespaced) and a ClusterTrainingRuntime (cluster-scoped, so the
    namespaceSelector does not apply) are sent when their templates reach for gang nodes
    or their JobSet metadata holds our keys; their own metadata sends nothing."""
    *_, hook = _hooks(default)
    assert hook["rules"] == [
        {
            "apiGroups": ["trainer.kubeflow.org"],
            "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["trainingruntimes", "clustertrainingruntimes"],
            "scope": "*",
        }
    ]
    assert hook["failurePolicy"] == "Fail"
    (cond,) = hook["matchConditions"]
    expr = cond["expression"]
    assert "object.metadata" not in expr
    assert "oldObject" not in expr
    assert expr.count(OURS) == 2
    assert expr.startswith(
        "object.?spec.?template.?spec.?replicatedJobs.orValue([]).exists(rj, "
        "rj.?template.?spec.?template.?spec.?tolerations"
    )


def test_the_kinds_hook_names_are_values(renders: dict[str, Rendered]) -> None:
    hooks = renders["alerts-custom"].one("ValidatingWebhookConfiguration")["webhooks"]
    assert [h["name"] for h in hooks] == [
        "gang-jobs.example.com",
        "jobsets.atomic-gang.k8s.aws",
        "gang-trainjobs.example.com",
        "gang-runtimes.example.com",
    ]


def test_cert_manager_chain(default: Rendered) -> None:
    issuers = {i["metadata"]["name"]: i["spec"] for i in default.of("Issuer")}
    certs = {c["metadata"]["name"]: c["spec"] for c in default.of("Certificate")}
    ca, serving = certs[f"{SVC}-ca"], certs[f"{SVC}-tls"]

    assert issuers[f"{SVC}-selfsigned"] == {"selfSigned": {}}
    assert ca["isCA"] is True
    assert ca["issuerRef"]["name"] == f"{SVC}-selfsigned"
    assert issuers[f"{SVC}-ca"] == {"ca": {"secretName": ca["secretName"]}}
    assert serving["issuerRef"]["name"] == f"{SVC}-ca"
    assert SVC_DNS in serving["dnsNames"]
    assert "ipAddresses" not in serving
    assert serving["secretName"] == _tls_volume(default)
    vwc = default.one("ValidatingWebhookConfiguration")
    assert vwc["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{NAMESPACE}/{SVC}-tls"
    }
    assert "caBundle" not in _hook(default)["clientConfig"]  # the cainjector fills it


def _pem(b64: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(b64))


def test_helm_generated_certificate(renders: dict[str, Rendered]) -> None:
    r = renders["helm-certs"]
    secret = r.one("Secret", "-webhook-tls")
    ca, leaf = _pem(secret["data"]["ca.crt"]), _pem(secret["data"]["tls.crt"])
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value

    assert secret["type"] == "kubernetes.io/tls"
    assert r.of("Certificate") == r.of("Issuer") == []
    assert _hook(r)["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    leaf.verify_directly_issued_by(ca)
    assert SVC_DNS in names.get_values_for_type(x509.DNSName)
    assert _tls_volume(r) == secret["metadata"]["name"]
    assert "annotations" not in r.one("ValidatingWebhookConfiguration")["metadata"]


def test_provided_secret_and_ca_bundle(renders: dict[str, Rendered]) -> None:
    r = renders["provided"]

    assert r.of("Secret") == r.of("Certificate") == r.of("Issuer") == []
    assert _hook(r)["clientConfig"]["caBundle"] == "Q0EK"
    assert _tls_volume(r) == "my-tls"


def test_dev_url_replaces_the_service_and_joins_the_certificate(
    renders: dict[str, Rendered],
) -> None:
    cm = renders["dev-url"]
    serving = cm.one("Certificate", "-webhook-tls")["spec"]
    helm = renders["dev-url-helm"]
    leaf = _pem(helm.one("Secret", "-webhook-tls")["data"]["tls.crt"])
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    by_name = renders["dev-url-host"].one("Certificate", "-webhook-tls")["spec"]

    assert _hook(cm)["clientConfig"] == {"url": f"https://127.0.0.1:18443{PATH}"}
    assert serving["ipAddresses"] == ["127.0.0.1"]
    assert _hook(helm)["clientConfig"]["url"] == f"https://127.0.0.1:18443{PATH}"
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert "host.docker.internal" in by_name["dnsNames"]
    assert "ipAddresses" not in by_name

"""Our dev Kueue objects and webhook registration have the required shape."""

from __future__ import annotations

import base64

from atomic_gang.settings import DEFAULT_CONTROLLER_NAME, GangSettings
from atomic_gang_devstack import dev_objects as dev


def test_cluster_queue_uses_the_check_strategy_with_nonzero_quota() -> None:
    cq = dev.cluster_queue()
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": dev.ADMISSION_CHECK}]
    }
    assert "admissionChecks" not in cq["spec"]  # removed in v1beta2
    quotas = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert {q["name"] for q in quotas} >= {"cpu", "memory"}
    assert all(q["nominalQuota"] not in ("0", 0) for q in quotas)


def test_admission_check_is_ours() -> None:
    assert dev.admission_check()["spec"] == {"controllerName": DEFAULT_CONTROLLER_NAME}


def test_webhook_fails_closed_on_url_with_ca_bundle() -> None:
    vwc = dev.validating_webhook(url="https://127.0.0.1:9/validate/batch/v1/job", ca_pem=b"CA")
    hooks = vwc["webhooks"]
    assert [h["name"] for h in hooks] == [
        dev.WEBHOOK_NAME,
        dev.JOBSET_WEBHOOK_NAME,
        dev.TRAINJOB_WEBHOOK_NAME,
        dev.RUNTIME_WEBHOOK_NAME,
    ]
    for hook in hooks:
        assert hook["failurePolicy"] == "Fail"
        assert hook["sideEffects"] == "None"
        assert hook["clientConfig"] == {
            "url": "https://127.0.0.1:9/validate/batch/v1/job",
            "caBundle": base64.b64encode(b"CA").decode(),
        }
        excluded = hook["namespaceSelector"]["matchExpressions"][0]["values"]
        assert "kube-system" in excluded
        (rule,) = hook["rules"]
        assert rule["operations"] == ["CREATE", "UPDATE"]
    rules = [(r["apiGroups"], r["resources"], r["scope"]) for h in hooks for r in h["rules"]]
    assert rules == [
        (["batch"], ["jobs"], "Namespaced"),
        (["jobset.x-k8s.io"], ["jobsets"], "Namespaced"),
        (["trainer.kubeflow.org"], ["trainjobs"], "Namespaced"),
        (["trainer.kubeflow.org"], ["trainingruntimes", "clustertrainingruntimes"], "*"),
    ]


def test_dev_settings_are_valid_settings() -> None:
    settings = GangSettings(**dev.DEV_SETTINGS)
    assert settings.cluster_name == "atomic-gang-dev"
    assert settings.defaults.region == "us-east-1"

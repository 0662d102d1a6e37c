"""``helm install``, use, renew, ``upgrade`` and ``uninstall`` for real.

The module's release (see release.py) is checked (objects, pods on kwok
nodes, RBAC by SubjectAccessReview and by running the real controller as the
chart's ServiceAccount, the webhook through the chart's registration), then
its certificate is renewed, then it is upgraded and finally uninstalled: the
tests run in file order and the last two change it for good.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from atomic_gang_devstack.components.cloud import aws_env
from tests.e2e.chart.conftest import wait_ready_pods
from tests.e2e.chart.release import (
    INSTANCE,
    JOBS_NS,
    NS,
    RELEASE,
    TLS_SECRET,
    WEBHOOK_NAME,
    Release,
)
from tests.e2e.chart.support import (
    WebhookProcess,
    access_reviews,
    renew_certificate,
    run_provisioner,
    secret_data,
    serial_of,
)
from tests.e2e.conftest import LocalStack
from tests.e2e.jobs import gang_job
from tests.e2e.kube import Kube, has_condition, wait_for
from tests.integration.chart.notes import missing_in_order, spec_verify_lines
from tests.integration.chart.render import CHART, Obj, manifest, merge

pytestmark = pytest.mark.e2e


def _bad_job(name: str) -> dict[str, Any]:
    """Valid for the dev stack's webhook, not for this release's settings (m5.large only)."""
    return gang_job(name, JOBS_NS, annotations={"atomic-gang.k8s.aws/instance-type": "c5.xlarge"})


def test_every_object_is_created_and_pods_run_on_kwok_nodes(
    release: Release, chart_nodes: tuple[str, ...]
) -> None:
    kube = release.kube
    objects = release.helm.manifest(RELEASE, NS)
    live = kube.run("get", "-f", "-", "-o", "name", stdin=manifest(objects)).stdout.split()

    assert len(live) == len(objects) >= 20
    for component, replicas in (("controller", 2), ("webhook", 2)):
        pods = wait_ready_pods(
            kube, NS, f"{INSTANCE},app.kubernetes.io/component={component}", replicas
        )
        assert {p["spec"]["nodeName"] for p in pods} <= set(chart_nodes)
    notes = release.install_output.split("\nNOTES:\n", 1)[1]
    assert missing_in_order(notes, spec_verify_lines("chart-e2e-check")) == []
    assert "WARNING: webhook.devUrl is set" in notes


SA = f"system:serviceaccount:{NS}:atomic-gang-controller"
SA_GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"]


def _can(verb: str, resource: str, group: str = "", sub: str = "", ns: str = "") -> Obj:
    return {"verb": verb, "resource": resource, "group": group, "subresource": sub, "namespace": ns}


def test_rbac_grants_the_controller_exactly_its_needs(release: Release) -> None:
    kq, ag = "kueue.x-k8s.io", "atomic-gang.k8s.aws"
    allowed = [
        _can("watch", "workloads", kq),
        _can("patch", "workloads", kq, "status", JOBS_NS),
        _can("patch", "admissionchecks", kq, "status"),
        _can("list", "resourceflavors", kq),
        _can("create", "gangnodepools", ag),
        _can("update", "gangnodepools", ag, "status"),
        _can("update", "gangnodepools", ag, "finalizers"),
        _can("watch", "nodes"),
        # Only our topology labels, on our nodes: the node-labels admission policy
        # holds the patch to that (tests/integration/kube/test_node_label_policy.py).
        _can("patch", "nodes"),
        _can("list", "jobs", "batch"),
        _can("patch", "events", ns=JOBS_NS),
        _can("update", "leases", "coordination.k8s.io", ns=NS),
    ]
    denied = [
        _can("get", "secrets", ns=NS),
        _can("delete", "gangnodepools", ag),
        _can("update", "workloads", kq, ns=JOBS_NS),
        _can("create", "leases", "coordination.k8s.io", ns="kube-system"),
        _can("create", "pods", ns=JOBS_NS),
        _can("delete", "nodes"),
        _can("update", "nodes", sub="status"),
    ]

    got = access_reviews(release.kube, SA, SA_GROUPS, allowed + denied)

    assert got == [True] * len(allowed) + [False] * len(denied)


def test_the_provisioner_runs_under_the_charts_service_account(
    release: Release, local_stack: LocalStack, tmp_path: Path
) -> None:
    kube, ctx = release.kube, local_stack.ctx
    orgs = tuple(g for g in SA_GROUPS if g != "system:authenticated")
    kubeconfig = ctx.client_kubeconfig("chart-e2e-controller", SA, orgs=orgs)
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        kube.get("configmap", f"{RELEASE}-settings", "-n", NS)["data"]["settings.yaml"]
    )
    log = ctx.log_path("chart-e2e-provisioner")

    with run_provisioner(
        kubeconfig, settings, namespace=NS, pod="chart-e2e-0", log=log, aws=aws_env(ctx)
    ):
        check = wait_for(
            lambda: (
                has_condition(c := kube.get("admissioncheck", "chart-e2e-check"), "Active") and c
            ),
            timeout=60,
            what="the chart's AdmissionCheck to turn Active",
        )
        lease = kube.get("lease", "atomic-gang-provisioner", "-n", NS)

    assert check["spec"]["controllerName"] == "atomic-gang.k8s.aws/chart-e2e"
    assert lease["spec"]["holderIdentity"].startswith("chart-e2e-0_")
    assert "forbidden" not in log.read_text().lower()


@pytest.fixture(scope="module")
def serving(release: Release) -> WebhookProcess:
    """The chart's webhook serving from the Secret cert-manager issued (caBundle injected)."""
    kube = release.kube
    wait_for(lambda: secret_data(kube, NS, TLS_SECRET), timeout=90, what="the issued Secret")
    wait_for(lambda: _ca_bundle(kube), timeout=60, what="the cainjector's caBundle")
    release.webhook.volume.sync(kube, NS, TLS_SECRET)
    settings = kube.get("configmap", f"{RELEASE}-settings", "-n", NS)["data"]["settings.yaml"]
    release.webhook.settings.write_text(settings)
    release.webhook.start()
    return release.webhook


def _vwc(kube: Kube) -> dict[str, Any]:
    vwc: dict[str, Any] = kube.get("validatingwebhookconfiguration", f"{RELEASE}-webhook")
    return vwc


def _ca_bundle(kube: Kube) -> str | None:
    bundle = _vwc(kube)["webhooks"][0]["clientConfig"].get("caBundle")
    return str(bundle) if bundle else None


def test_cert_manager_issued_the_secret_and_injected_the_ca(
    release: Release, serving: WebhookProcess
) -> None:
    data = serving.volume.current
    cert = release.kube.get("certificate", TLS_SECRET, "-n", NS)
    ready = [c for c in cert["status"]["conditions"] if c["type"] == "Ready"]

    assert base64.b64decode(_ca_bundle(release.kube) or "") == data["ca.crt"]
    assert [c["status"] for c in ready] == ["True"]
    assert serving.served_serial() == serial_of(data["tls.crt"])


def test_cert_manager_1_11_cainjector_drops_match_conditions(
    release: Release, serving: WebhookProcess
) -> None:
    """Records the caveat in docs/operations.md: a cert-manager bump fails this; update both."""
    (rendered,) = [
        o
        for o in release.helm.manifest(RELEASE, NS)
        if o["kind"] == "ValidatingWebhookConfiguration"
    ]
    assert [c["name"] for c in rendered["webhooks"][0]["matchConditions"]] == [
        "atomic-gang-keys-or-gang-node-claims"
    ]
    assert _ca_bundle(release.kube)  # the cainjector has written the registration

    assert "matchConditions" not in _vwc(release.kube)["webhooks"][0]


def test_bad_job_is_rejected_through_the_chart_webhook(
    release: Release, serving: WebhookProcess
) -> None:
    before = serving.denied("InstanceTypeNotAllowed")
    done = release.kube.apply(_bad_job("bad-c5"), check=False)

    assert done.returncode != 0
    # Only this release's settings (from its ConfigMap) allow m5.large alone.
    assert "[InstanceTypeNotAllowed]; allowed: m5.large" in done.stderr
    assert "c5.xlarge" in done.stderr
    assert serving.denied("InstanceTypeNotAllowed") == before + 1  # our process decided
    good = gang_job(
        "good-m5", JOBS_NS, annotations={"atomic-gang.k8s.aws/instance-type": "m5.large"}
    )
    assert release.kube.apply(good).returncode == 0


def test_certificate_renewal_is_picked_up_without_a_restart(
    release: Release, serving: WebhookProcess
) -> None:
    kube, webhook = release.kube, serving
    assert webhook.proc is not None
    pid, before = webhook.proc.pid, serial_of(webhook.volume.current["tls.crt"])
    assert webhook.served_serial() == before

    renew_certificate(kube, TLS_SECRET, NS)

    def renewed() -> int | None:
        data = secret_data(kube, NS, TLS_SECRET)
        serial = serial_of(data["tls.crt"]) if data else before
        return serial if serial != before else None

    after = wait_for(renewed, timeout=90, what="cert-manager to write a renewed certificate")
    assert webhook.volume.sync(kube, NS, TLS_SECRET)  # the kubelet's atomic swap
    wait_for(lambda: webhook.served_serial() == after, timeout=30, what="the renewed cert served")

    assert webhook.proc.pid == pid
    assert webhook.proc.poll() is None
    denied = webhook.denied("InstanceTypeNotAllowed")
    done = kube.apply(_bad_job("bad-after-renewal"), check=False)
    assert "[InstanceTypeNotAllowed]; allowed: m5.large" in done.stderr
    assert webhook.denied("InstanceTypeNotAllowed") == denied + 1


def test_upgrade_changes_settings_and_keeps_the_ca(release: Release) -> None:
    kube = release.kube
    before = _ca_bundle(kube)
    values = merge(release.values, {"limits": {"maxGangSize": 8}, "replicaCount": 1})
    values["webhook"]["timeoutSeconds"] = 7

    release.helm.run(
        "upgrade",
        RELEASE,
        str(CHART),
        "--namespace",
        NS,
        "--wait",
        "--timeout",
        "3m",
        values=values,
    )

    settings = kube.get("configmap", f"{RELEASE}-settings", "-n", NS)["data"]["settings.yaml"]
    assert "maxGangSize: 8" in settings
    after = _vwc(kube)["webhooks"][0]
    assert after["timeoutSeconds"] == 7
    assert before
    assert after["clientConfig"]["caBundle"] == before
    wait_ready_pods(kube, NS, f"{INSTANCE},app.kubernetes.io/component=controller", 1)
    history = json.loads(release.helm.run("history", RELEASE, "--namespace", NS, "-o", "json"))
    assert [h["status"] for h in history] == ["superseded", "deployed"]


def test_uninstall_leaves_no_webhook_that_blocks_jobs(release: Release) -> None:
    kube = release.kube
    objects = release.helm.manifest(RELEASE, NS)

    release.helm.run("uninstall", RELEASE, "--namespace", NS, "--wait")
    release.installed = False
    release.webhook.stop()

    left = kube.run("get", "-f", "-", "-o", "name", "--ignore-not-found", stdin=manifest(objects))
    assert left.stdout.split() == []
    hooks = kube.items("validatingwebhookconfigurations")
    assert [h["metadata"]["name"] for h in hooks if WEBHOOK_NAME in json.dumps(h)] == []
    # The Job this release rejected is now admitted; nothing points at the stopped process.
    assert kube.apply(_bad_job("after-uninstall")).returncode == 0
    # Helm keeps CRDs on uninstall (the pool records' finalizers still need the controller).
    assert kube.run("get", "crd", "gangnodepools.atomic-gang.k8s.aws", check=False).returncode == 0

"""The chart's gang node ValidatingAdmissionPolicy, on the dev stack's API server.

Rendered from ``charts/atomic-gang-provisioner`` with the pinned helm (cached by the
template's content), so the dev stack and the e2e tests run the very policy a release
installs. Enforcement is proven, not assumed: a server-side dry-run of a Pod that
tolerates the gang taint must come back denied by the policy.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from atomic_gang import keys
from atomic_gang_devstack import dev_objects, waits
from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_devstack.component import Component, Context

CHART = REPO_ROOT / "charts" / "atomic-gang-provisioner"
TEMPLATE = "templates/gang-node-policy.yaml"
RELEASE, NAMESPACE = "atomic-gang", "atomic-gang-system"
DENIED = "gang nodes belong to their gang"
REQUIRED = {
    "clusterName": dev_objects.DEV_SETTINGS["clusterName"],
    "defaults": dev_objects.DEV_SETTINGS["defaults"],
    "kueue": {"clusterQueue": {"nominalQuota": {"cpu": "1", "memory": "1Gi"}}},
}


def render(helm: Path, cache: Path, kube_version: str) -> list[dict[str, Any]]:
    """The policy and its binding, as the chart renders them for ``kube_version``."""
    blob = json.dumps([str(helm), (CHART / TEMPLATE).read_text(), REQUIRED], sort_keys=True)
    path = cache / f"gang-node-policy-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.json"
    if path.exists():
        return list(json.loads(path.read_text(encoding="utf-8")))
    argv = [str(helm), "template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    argv += ["--kube-version", kube_version, "--show-only", TEMPLATE, "--values", "-"]
    out = subprocess.run(
        argv,
        input=yaml.safe_dump(REQUIRED),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(docs), encoding="utf-8")
    return docs


def squatter(namespace: str) -> dict[str, Any]:
    """A Pod the policy must deny: it tolerates the gang taint, and no Job owns it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "devstack-gang-node-probe", "namespace": namespace},
        "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "tolerations": [{"key": keys.GANG_TAINT, "operator": "Exists"}],
        },
    }


class GangNodePolicy(Component):
    name = "atomic-gang-node-policy"
    # The probe's Pod needs the namespace's default ServiceAccount (KCM makes it).
    needs = ("kube-apiserver", "kube-controller-manager")
    ready_timeout = 60.0

    def start(self, ctx: Context) -> None:
        version = ctx.bins.version("kube-apiserver").removeprefix("v")
        ctx.kubectl.apply(render(ctx.bins.path("helm"), ctx.bins.root / "rendered", version))

    def wait_ready(self, ctx: Context) -> None:
        probe = yaml.safe_dump(squatter(ctx.options.namespace))

        def denied() -> bool:
            done = ctx.kubectl.run(
                "create", "--dry-run=server", "-f", "-", stdin=probe, check=False
            )
            return done.returncode != 0 and DENIED in done.stderr

        waits.wait_until(
            denied, name=self.name, what="enforced", timeout=self.ready_timeout, cancel=ctx.abort
        )

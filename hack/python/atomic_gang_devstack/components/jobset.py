"""JobSet's CRD, and its controller as a local process serving its webhooks.

The CRD is a step of its own because Kueue, with the JobSet integration on, must see
it installed before it starts. The controller runs with its internal cert management
off: its rotator would keep certificates under a fixed /tmp path for a Service name.
It serves a certificate of the cluster CA for 127.0.0.1 from a directory of its own
(and gets a TMPDIR of its own), and its webhook configurations point at that address.
It acts as the ServiceAccount a release install gives it (``jobset_manifests.USERNAME``),
with the ClusterRole of its release, through a client certificate.
"""

from __future__ import annotations

import os
import shutil
import ssl
from collections.abc import Mapping

import yaml

from atomic_gang_devstack import jobset_manifests as jm
from atomic_gang_devstack import waits
from atomic_gang_devstack.component import Component, Context, ProcessComponent


class JobSetCrd(Component):
    name = "jobset-crd"
    needs = ("kube-apiserver",)
    ready_timeout = 60.0

    def start(self, ctx: Context) -> None:
        ctx.kubectl.apply(jm.crds(ctx.bins.source("jobset")))

    def wait_ready(self, ctx: Context) -> None:
        ctx.kubectl.wait_established([jm.CRD_NAME], timeout=self.ready_timeout)


class JobSetController(ProcessComponent):
    name = "jobset"
    needs = (JobSetCrd.name,)
    ready_timeout = 60.0
    _tls: ssl.SSLContext | None = None

    def prepare(self, ctx: Context) -> None:
        d = ctx.dir / "jobset"
        certs = d / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        (d / "tmp").mkdir(parents=True, exist_ok=True)
        crt, key = ctx.serving_cert("jobset-webhook")
        shutil.copyfile(crt, certs / "tls.crt")  # the names controller-runtime reads
        shutil.copyfile(key, certs / "tls.key")
        config = jm.manager_config(
            health_port=ctx.port("jobset-health"),
            webhook_port=ctx.port("jobset-webhook"),
            cert_dir=certs,
            qps=ctx.options.control_plane_qps,
        )
        (d / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        src = ctx.bins.source("jobset")
        hooks = jm.webhooks(src, base_url=self._webhook_url(ctx), ca_pem=ctx.ca_file.read_bytes())
        ctx.kubectl.apply([*jm.rbac(src), *hooks])
        ctx.client_kubeconfig("jobset", jm.USERNAME, orgs=jm.GROUPS)

    @staticmethod
    def _webhook_url(ctx: Context) -> str:
        return f"https://127.0.0.1:{ctx.port('jobset-webhook')}"

    def argv(self, ctx: Context) -> list[str]:
        return [
            str(ctx.bins.path("jobset")),
            f"--config={ctx.dir / 'jobset' / 'config.yaml'}",
            f"--kubeconfig={ctx.dir / 'kubeconfigs' / 'jobset.yaml'}",
            "--zap-log-level=info",
        ]

    def env(self, ctx: Context) -> Mapping[str, str]:
        return {**os.environ, "TMPDIR": str(ctx.dir / "jobset" / "tmp")}

    def probe(self, ctx: Context) -> bool:
        if not waits.http_ok(f"http://127.0.0.1:{ctx.port('jobset-health')}/readyz"):
            return False
        if self._tls is None:
            self._tls = waits.tls_context(ctx.ca_file)
        return all(
            waits.admission_allowed(
                self._webhook_url(ctx) + path, jm.probe_review(operation), verify=self._tls
            )
            for path, operation in jm.JOBSET_WEBHOOK_PROBES.items()
        )

"""Kueue's manager as a local process, with its internal cert management on.

Ordering matters. Kueue's cert bootstrap blocks until it has injected its CA
into both webhook configurations and five CRDs, so those are installed first.
Its rotator keeps a pre-seeded Secret whose CA carries the DNS name
``kueue-ca`` and whose server certificate is valid for the webhook Service
name; ours also covers 127.0.0.1, the address the apiserver really dials. The
rotator never writes ``certDir`` (in a pod, kubelet mounts the Secret there),
so we write the same pair into it before the manager starts. With the JobSet
integration on (``batch/job`` is always on), the JobSet CRD is installed first; with
the TrainJob integration on, the Trainer's CRDs (TrainJobs and both runtime kinds).
"""

from __future__ import annotations

import ssl
from typing import ClassVar

import yaml

from atomic_gang_devstack import kueue_manifests as km
from atomic_gang_devstack import pki, waits
from atomic_gang_devstack.component import Context, ProcessComponent
from atomic_gang_devstack.components.jobset import JobSetCrd
from atomic_gang_devstack.components.trainer import TrainerCrds

FEATURE_GATES = "VisibilityOnDemand=false"  # its API server exits when it cannot serve
JOB_FRAMEWORK = "batch/job"
JOBSET_FRAMEWORK = "jobset.x-k8s.io/jobset"
TRAINJOB_FRAMEWORK = "trainer.kubeflow.org/trainjob"


class Kueue(ProcessComponent):
    name = "kueue"
    needs: ClassVar[tuple[str, ...]] = ("kube-apiserver",)
    ready_timeout = 120.0
    _tls: ssl.SSLContext | None = None

    def __init__(self, *, jobset: bool = False, trainer: bool = False) -> None:
        """``jobset``: the JobSet integration too; ``trainer``: the TrainJob integration too.
        Kueue then starts once their CRDs are installed (a framework whose CRD is missing
        is set up late or not at all; the TrainJob integration also indexes both runtime
        kinds)."""
        self.frameworks: tuple[str, ...] = (JOB_FRAMEWORK,)
        needs: tuple[str, ...] = ("kube-apiserver",)
        if jobset:
            self.frameworks += (JOBSET_FRAMEWORK,)
            needs += (JobSetCrd.name,)
        if trainer:
            self.frameworks += (TRAINJOB_FRAMEWORK,)
            needs += (TrainerCrds.name,)
        self.needs = needs  # type: ignore[misc]

    def prepare(self, ctx: Context) -> None:
        d = ctx.dir / "kueue"
        ca, server = self._certs(ctx)
        chart = ctx.bins.source("kueue") / "charts" / "kueue"
        config = km.manager_config(
            health_port=ctx.port("kueue-health"),
            webhook_port=ctx.port("kueue-webhook"),
            cert_dir=d / "certs",
            qps=ctx.options.control_plane_qps,
            concurrency=km.chart_concurrency(chart),
            pods_ready_timeout=ctx.options.pods_ready_timeout,
            frameworks=self.frameworks,
        )
        (d / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        # Ports and paths only reach the chart's ConfigMap (dropped), so the
        # rendering is cached with placeholders and reused across launches.
        chart_config = km.manager_config(
            health_port=0, webhook_port=0, cert_dir=d, frameworks=self.frameworks
        )
        rendered = km.cached_render(
            ctx.bins.path("helm"), chart, chart_config, ctx.bins.root / "rendered"
        )
        docs = km.point_at(
            rendered, base_url=f"https://127.0.0.1:{ctx.port('kueue-webhook')}", ca_pem=ca.cert_pem
        )
        secret = km.seeded_secret(
            ca_crt=ca.cert_pem, ca_key=ca.key_pem, tls_crt=server.cert_pem, tls_key=server.key_pem
        )
        ctx.kubectl.apply([km.namespace(), *docs, secret])
        ctx.kubectl.wait_established(km.crd_names(docs))
        # The chart's RBAC is exercised for real: Kueue runs as its service account.
        ctx.client_kubeconfig(
            "kueue",
            f"system:serviceaccount:{km.NAMESPACE}:{km.SERVICE_ACCOUNT}",
            orgs=("system:serviceaccounts", f"system:serviceaccounts:{km.NAMESPACE}"),
        )

    @staticmethod
    def _certs(ctx: Context) -> tuple[pki.Issued, pki.Issued]:
        d = ctx.dir / "kueue"
        ca = pki.new_ca(km.CA_NAME, rsa_pkcs1=True, dns_names=(km.CA_NAME,))
        ca.write(d, "ca")
        hosts = (km.SERVICE_DNS, "127.0.0.1", "localhost")
        server = pki.issue(ca, km.SERVICE_DNS, hosts=hosts, server=True)
        server.write(d, "server")
        server.write(d / "certs", "tls")  # what kubelet would mount from the Secret
        return ca, server

    def argv(self, ctx: Context) -> list[str]:
        return [
            str(ctx.bins.path("kueue")),
            f"--config={ctx.dir / 'kueue' / 'config.yaml'}",
            f"--kubeconfig={ctx.dir / 'kubeconfigs' / 'kueue.yaml'}",
            f"--feature-gates={FEATURE_GATES}",
        ]

    def probe(self, ctx: Context) -> bool:
        if not waits.http_ok(f"http://127.0.0.1:{ctx.port('kueue-health')}/readyz"):
            return False
        if self._tls is None:
            self._tls = waits.tls_context(ctx.dir / "kueue" / "ca.crt")
        return waits.tls_handshake_ok("127.0.0.1", ctx.port("kueue-webhook"), self._tls)

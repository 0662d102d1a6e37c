"""Kubeflow Trainer's CRDs, its controller as a local process serving its webhooks, and
the ClusterTrainingRuntimes.

The CRDs are a step of their own because Kueue, with the TrainJob integration on, must
see them installed before it starts. The controller builds a JobSet for each TrainJob,
so it starts once JobSet's controller (and its CRD) is ready. Its cert management is
off: its rotator would keep certificates under a fixed /tmp path for a Service name. Its
webhook server reads a certificate of the cluster CA for 127.0.0.1 from
``$TMPDIR/k8s-webhook-server/serving-certs`` (its Configuration has no field for the
directory), with a TMPDIR of its own, and its webhook configurations point at that
address. It acts as the ServiceAccount a release install gives it
(``trainer_manifests.USERNAME``), with the ClusterRole of its release, through a token of
that ServiceAccount (the name is longer than a certificate's common name may be). The
runtimes go in last: the controller's webhook validates them.
"""

from __future__ import annotations

import os
import shutil
import ssl
from collections.abc import Mapping
from pathlib import Path

import yaml

from atomic_gang_devstack import trainer_manifests as tm
from atomic_gang_devstack import waits
from atomic_gang_devstack.component import Component, Context, ProcessComponent
from atomic_gang_devstack.components.jobset import JobSetController


class TrainerCrds(Component):
    name = "trainer-crds"
    needs = ("kube-apiserver",)
    ready_timeout = 60.0

    def start(self, ctx: Context) -> None:
        ctx.kubectl.apply(tm.crds(ctx.bins.source("trainer")))

    def wait_ready(self, ctx: Context) -> None:
        ctx.kubectl.wait_established(list(tm.CRD_NAMES), timeout=self.ready_timeout)


class TrainerController(ProcessComponent):
    name = "trainer"
    needs = (TrainerCrds.name, JobSetController.name)
    ready_timeout = 60.0
    _tls: ssl.SSLContext | None = None

    @staticmethod
    def tmpdir(ctx: Context) -> Path:
        return ctx.dir / "trainer" / "tmp"

    def prepare(self, ctx: Context) -> None:
        d = ctx.dir / "trainer"
        certs = self.tmpdir(ctx) / "k8s-webhook-server" / "serving-certs"
        certs.mkdir(parents=True, exist_ok=True)
        crt, key = ctx.serving_cert("trainer-webhook")
        shutil.copyfile(crt, certs / "tls.crt")  # the names controller-runtime reads
        shutil.copyfile(key, certs / "tls.key")
        src = ctx.bins.source("trainer")
        config = tm.manager_config(
            src, health_port=ctx.port("trainer-health"), webhook_port=ctx.port("trainer-webhook")
        )
        (d / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        hooks = tm.webhooks(src, base_url=self._webhook_url(ctx), ca_pem=ctx.ca_file.read_bytes())
        ctx.kubectl.apply([*tm.rbac(src), *hooks])
        ctx.service_account_kubeconfig("trainer", tm.NAMESPACE, tm.SERVICE_ACCOUNT)

    @staticmethod
    def _webhook_url(ctx: Context) -> str:
        return f"https://127.0.0.1:{ctx.port('trainer-webhook')}"

    def argv(self, ctx: Context) -> list[str]:
        return [
            str(ctx.bins.path("trainer")),
            f"--config={ctx.dir / 'trainer' / 'config.yaml'}",
            f"--kubeconfig={ctx.dir / 'kubeconfigs' / 'trainer.yaml'}",
            "--zap-log-level=info",
        ]

    def env(self, ctx: Context) -> Mapping[str, str]:
        return {**os.environ, "TMPDIR": str(self.tmpdir(ctx))}

    def probe(self, ctx: Context) -> bool:
        if not waits.http_ok(f"http://127.0.0.1:{ctx.port('trainer-health')}/readyz"):
            return False
        if self._tls is None:
            self._tls = waits.tls_context(ctx.ca_file)
        return all(
            waits.admission_allowed(
                self._webhook_url(ctx) + path, tm.probe_review(path), verify=self._tls
            )
            for path in tm.WEBHOOK_PROBES
        )


class TrainerRuntimes(Component):
    """The ClusterTrainingRuntimes of ``trainer_manifests.RUNTIMES``."""

    name = "trainer-runtimes"
    needs = (TrainerController.name,)

    def start(self, ctx: Context) -> None:
        ctx.kubectl.apply(tm.runtimes(ctx.bins.source("trainer")))

"""Our validating webhook as a real uvicorn process over TLS, and its registration.

The process is configured only through its documented environment
(``ATOMIC_GANG_WEBHOOK_*`` and ``ATOMIC_GANG_CONFIG``); inherited
``ATOMIC_GANG_*`` variables are dropped so a developer's shell cannot change
what the tests validate against. Registration is proven, not assumed: a
server-side dry-run of a bad Job must come back denied by our webhook.
"""

from __future__ import annotations

import os
import ssl
import sys
from collections.abc import Mapping

import yaml

from atomic_gang_devstack import dev_objects, waits
from atomic_gang_devstack.component import Component, Context, ProcessComponent


class GangWebhook(ProcessComponent):
    name = "atomic-gang-webhook"
    ready_timeout = 30.0
    _tls: ssl.SSLContext | None = None

    def prepare(self, ctx: Context) -> None:
        ctx.serving_cert("webhook")
        settings = ctx.dir / "webhook" / "settings.yaml"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(yaml.safe_dump(dev_objects.DEV_SETTINGS), encoding="utf-8")

    def argv(self, ctx: Context) -> list[str]:
        return [sys.executable, "-m", "atomic_gang_webhook"]

    def env(self, ctx: Context) -> Mapping[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("ATOMIC_GANG_")}
        return {
            **base,
            "ATOMIC_GANG_WEBHOOK_HOST": "127.0.0.1",
            "ATOMIC_GANG_WEBHOOK_PORT": str(ctx.port(self.name)),
            "ATOMIC_GANG_WEBHOOK_CERT_FILE": str(ctx.pki_dir / "webhook.crt"),
            "ATOMIC_GANG_WEBHOOK_KEY_FILE": str(ctx.pki_dir / "webhook.key"),
            "ATOMIC_GANG_CONFIG": str(ctx.dir / "webhook" / "settings.yaml"),
            "PYTHONUNBUFFERED": "1",
        }

    def probe(self, ctx: Context) -> bool:
        if self._tls is None:
            self._tls = waits.tls_context(ctx.ca_file)
        return waits.http_ok(f"https://127.0.0.1:{ctx.port(self.name)}/readyz", verify=self._tls)


class WebhookRegistration(Component):
    """The ValidatingWebhookConfiguration, failurePolicy Fail, URL + caBundle."""

    name = "atomic-gang-webhook-registration"
    # Kueue's own Job webhook is called first and fails closed, so the dry-run
    # probe below can only reach ours once Kueue is serving.
    needs = ("kube-apiserver", "atomic-gang-webhook", "kueue")
    ready_timeout = 30.0

    def start(self, ctx: Context) -> None:
        url = f"https://127.0.0.1:{ctx.port(GangWebhook.name)}{dev_objects.WEBHOOK_PATH}"
        ctx.kubectl.apply(
            [dev_objects.validating_webhook(url=url, ca_pem=ctx.ca_file.read_bytes())]
        )

    def wait_ready(self, ctx: Context) -> None:
        # The apiserver picks up a new webhook configuration through an informer,
        # so there is a short window in which it is not yet enforced.
        probe = yaml.safe_dump(dev_objects.probe_job(ctx.options.namespace))

        def denied_by_us() -> bool:
            done = ctx.kubectl.run(
                "create", "--dry-run=server", "-f", "-", stdin=probe, check=False
            )
            # Only our webhook knows the annotation; its denial names key and value.
            return done.returncode != 0 and dev_objects.PROBE_VALUE in done.stderr

        waits.wait_until(
            denied_by_us,
            name=self.name,
            what="enforced",
            timeout=self.ready_timeout,
            cancel=ctx.abort,
        )

"""Stand-ins for what a node would do for the chart's pods: mount the Secret, run the process.

kwok fakes the pods (no container runs), so the webhook the chart registers
through ``webhook.devUrl`` runs here: :class:`SecretVolume` projects the
chart's TLS Secret the way the kubelet does (``..data`` symlink swap on every
change) and :class:`WebhookProcess` serves from that directory.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from cryptography import x509

from tests.e2e.kube import Kube, wait_for
from tests.integration.chart.render import Obj


@dataclass
class SecretVolume:
    """A directory laid out like a kubelet-mounted Secret volume."""

    root: Path
    generation: int = 0
    current: dict[str, bytes] = field(default_factory=dict)

    def publish(self, data: dict[str, bytes]) -> bool:
        """Swap in ``data`` atomically; False when nothing changed."""
        if data == self.current:
            return False
        self.generation += 1
        version = self.root / f"..v{self.generation}"
        version.mkdir(parents=True)
        for name, content in data.items():
            (version / name).write_bytes(content)
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(version.name)
        os.replace(tmp, self.root / "..data")
        for name in data:
            link = self.root / name
            if not link.is_symlink():
                link.symlink_to(f"..data/{name}")
        self.current = dict(data)
        return True

    def sync(self, kube: Kube, namespace: str, name: str) -> bool:
        """Copy the Secret's current data in (what the kubelet does periodically)."""
        secret = kube.get("secret", name, "-n", namespace)
        return self.publish({k: base64.b64decode(v) for k, v in secret["data"].items()})


def secret_data(kube: Kube, namespace: str, name: str) -> dict[str, bytes] | None:
    done = kube.run("get", "secret", name, "-n", namespace, "-o", "json", check=False)
    if done.returncode != 0:
        return None
    data = json.loads(done.stdout).get("data") or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


def serial_of(pem: bytes) -> int:
    return x509.load_pem_x509_certificate(pem).serial_number


@dataclass
class WebhookProcess:
    """``python -m atomic_gang_webhook`` serving from a SecretVolume, as the pod would."""

    port: int
    volume: SecretVolume
    settings: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATOMIC_GANG_")}
        env |= {
            "ATOMIC_GANG_WEBHOOK_HOST": "127.0.0.1",
            "ATOMIC_GANG_WEBHOOK_PORT": str(self.port),
            "ATOMIC_GANG_WEBHOOK_CERT_FILE": str(self.volume.root / "tls.crt"),
            "ATOMIC_GANG_WEBHOOK_KEY_FILE": str(self.volume.root / "tls.key"),
            "ATOMIC_GANG_WEBHOOK_CERT_CHECK_INTERVAL": "0.2",
            "ATOMIC_GANG_CONFIG": str(self.settings),
        }
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "atomic_gang_webhook"], env=env, stdout=out, stderr=out
            )
        wait_for(self.ready, timeout=30, what="the webhook's /readyz")

    def _ca(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.volume.current["ca.crt"].decode())

    def ready(self) -> bool:
        try:
            url = f"https://127.0.0.1:{self.port}/readyz"
            return httpx.get(url, verify=self._ca(), timeout=2).status_code == 200
        except (httpx.TransportError, ssl.SSLError, OSError):
            return False

    def denied(self, reason: str) -> float:
        """``atomic_gang_webhook_reviews_total`` of CREATE denials for ``reason``."""
        url = f"https://127.0.0.1:{self.port}/metrics"
        text = httpx.get(url, verify=self._ca(), timeout=5).text
        want = ('operation="CREATE"', 'verdict="denied"', f'reason="{reason}"')
        for line in text.splitlines():
            if line.startswith("atomic_gang_webhook_reviews_total{") and all(
                w in line for w in want
            ):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def served_serial(self) -> int:
        """Serial of the certificate a new TLS connection gets."""
        with (
            socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw,
            self._ca().wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def access_reviews(kube: Kube, user: str, groups: list[str], checks: list[Obj]) -> list[bool]:
    """SubjectAccessReview of each ``resourceAttributes`` in ``checks`` for ``user``."""
    docs = [
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, "resourceAttributes": attrs},
        }
        for attrs in checks
    ]
    out = kube.run("create", "-f", "-", "-o", "json", stdin="\n---\n".join(map(json.dumps, docs)))
    return [bool(review["status"].get("allowed")) for review in _json_stream(out.stdout)]


def _json_stream(text: str) -> list[Obj]:
    """kubectl prints one JSON document per created object, back to back."""
    decoder, pos, docs = json.JSONDecoder(), 0, []
    while pos < len(text.rstrip()):
        doc, end = decoder.raw_decode(text, pos)
        docs.append(doc)
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return docs


@contextmanager
def run_provisioner(
    kubeconfig: Path,
    settings: Path,
    *,
    namespace: str,
    pod: str,
    log: Path,
    aws: dict[str, str],
) -> Iterator[subprocess.Popen[bytes]]:
    """The real controller, as the chart's pod would run it (env of the Deployment)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATOMIC_GANG_", "AWS_"))}
    env |= {
        "ATOMIC_GANG_PROVISIONER_KUBECONFIG": str(kubeconfig),
        "ATOMIC_GANG_PROVISIONER_NAMESPACE": namespace,
        "ATOMIC_GANG_PROVISIONER_HTTP_HOST": "127.0.0.1",
        "ATOMIC_GANG_PROVISIONER_HTTP_PORT": "0",
        "POD_NAME": pod,
        # The session's simulated EC2: the AdmissionCheck turns Active only once the
        # controller has resolved the cluster and listed its instances.
        **aws,
    }
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "atomic_gang_provisioner", "--config", str(settings)],
            env=env,
            stdout=out,
            stderr=out,
        )
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    assert code == 0, f"the provisioner exited {code}; see {log}"


def renew_certificate(kube: Kube, name: str, namespace: str) -> None:
    """What ``cmctl renew`` does: mark the Certificate Issuing (reason ManuallyTriggered)."""
    cert = kube.get("certificate", name, "-n", namespace)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [c for c in cert["status"].get("conditions", []) if c["type"] != "Issuing"]
    conditions.append(
        {
            "type": "Issuing",
            "status": "True",
            "reason": "ManuallyTriggered",
            "message": "renewal requested by an e2e test",
            "lastTransitionTime": now,
        }
    )
    patch = json.dumps({"status": {"conditions": conditions}})
    kube.run(
        "patch", "certificate", name, "-n", namespace,
        "--subresource=status", "--type=merge", "-p", patch,
    )  # fmt: skip

"""Run the real ``atomic-gang-webhook`` as a subprocess over TLS, for tests/bench."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import trustme

from tests.support.wait import wait_for

SETTINGS_YAML = """\
clusterName: my-eks-cluster
defaults: {region: us-east-1, nodeRoleArn: "arn:aws:iam::123456789012:role/eks-gang-node-role"}
limits: {maxGangSize: 64, maxKeepWarmTTL: 24h}
allowedInstanceTypes: ["p4d.24xlarge", "p5.*", "m5.large", "trn1.32xlarge"]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class SecretDir:
    """A directory laid out like a kubelet-mounted Secret (``..data`` symlink swap)."""

    root: Path
    generation: int = 0

    @property
    def cert(self) -> Path:
        return self.root / "tls.crt"

    @property
    def key(self) -> Path:
        return self.root / "tls.key"

    def publish(self, cert: trustme.LeafCert) -> None:
        self.generation += 1
        version = self.root / f"..v{self.generation}"
        version.mkdir()
        cert.cert_chain_pems[0].write_to_path(str(version / "tls.crt"))
        cert.private_key_pem.write_to_path(str(version / "tls.key"))
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(version.name)
        os.replace(tmp, self.root / "..data")  # atomic, as the kubelet does
        for name in ("tls.crt", "tls.key"):
            link = self.root / name
            if not link.is_symlink():
                link.symlink_to(f"..data/{name}")


@dataclass
class WebhookProcess:
    url: str
    ca: trustme.CA
    secret: SecretDir
    proc: subprocess.Popen[bytes]
    log: Path
    port: int

    def tls_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context()
        self.ca.configure_trust(ctx)
        return ctx

    def rss_bytes(self) -> int:
        """The server process's resident set size, from /proc."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def client(self, **kw: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, verify=self.tls_context(), **kw)  # type: ignore[arg-type]


@contextmanager
def run_webhook(
    tmp: Path, *, settings_yaml: str = SETTINGS_YAML, env: dict[str, str] | None = None
) -> Iterator[WebhookProcess]:
    ca = trustme.CA()
    secret = SecretDir(tmp / "secret")
    secret.root.mkdir()
    secret.publish(ca.issue_cert("127.0.0.1", "localhost"))
    config = tmp / "settings.yaml"
    config.write_text(settings_yaml)
    port = free_port()
    env = {
        **os.environ,
        "ATOMIC_GANG_WEBHOOK_HOST": "127.0.0.1",
        "ATOMIC_GANG_WEBHOOK_PORT": str(port),
        "ATOMIC_GANG_WEBHOOK_CERT_FILE": str(secret.cert),
        "ATOMIC_GANG_WEBHOOK_KEY_FILE": str(secret.key),
        "ATOMIC_GANG_WEBHOOK_CERT_CHECK_INTERVAL": "0.2",
        "ATOMIC_GANG_CONFIG": str(config),
        **(env or {}),
    }
    log = tmp / "webhook.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "atomic_gang_webhook"], env=env, stdout=out, stderr=out
        )
    wh = WebhookProcess(f"https://127.0.0.1:{port}", ca, secret, proc, log, port)
    try:
        with wh.client() as c:
            wait_for(lambda: c.get("/readyz").status_code == 200, timeout=20, what="readyz")
        yield wh
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

"""Kubeconfig files: one per client identity, all pointing at the local apiserver.

Paths to certificates are absolute, so a kubeconfig keeps working when it is
copied (``.dev/kubeconfig``) as long as the state directory stays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CLUSTER = "atomic-gang-local"


def kubeconfig(
    *, server: str, ca_file: Path, cert_file: Path, key_file: Path, user: str
) -> dict[str, Any]:
    """A single-context kubeconfig (as a dict) using client-certificate auth."""
    creds = {"client-certificate": str(cert_file), "client-key": str(key_file)}
    return _single(server=server, ca_file=ca_file, user=user, creds=creds)


def token_kubeconfig(*, server: str, ca_file: Path, token: str, user: str) -> dict[str, Any]:
    """A single-context kubeconfig (as a dict) using a bearer token."""
    return _single(server=server, ca_file=ca_file, user=user, creds={"token": token})


def _single(*, server: str, ca_file: Path, user: str, creds: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": CLUSTER, "cluster": {"server": server, "certificate-authority": str(ca_file)}}
        ],
        "users": [{"name": user, "user": creds}],
        "contexts": [{"name": f"{user}@{CLUSTER}", "context": {"cluster": CLUSTER, "user": user}}],
        "current-context": f"{user}@{CLUSTER}",
    }


def write(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path

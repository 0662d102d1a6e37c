"""nodeadm ``NodeConfig`` user data (MIME multipart) for gang nodes.

The kubelet registers with our labels (pool, group, generation, managed) and
with one taint: ``atomic-gang.k8s.aws/gang=<pool>:NoExecute`` (the kubelet enforces
NoExecute even for a pod bound with ``spec.nodeName``). The value is the
pool, so the ResourceFlavor can tolerate every gang with ``operator: Exists``
while a podSetUpdate can narrow a Job to its own pool with ``operator: Equal``.
Other workloads never land on a gang node by accident. Output is byte-for-byte
deterministic (fixed MIME boundary), which EC2 ClientToken idempotency needs.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from atomic_gang import keys

BOUNDARY = "==ATOMICGANG=="
TAINT_EFFECT = keys.GANG_TAINT_EFFECT


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterJoin:
    """What a node needs to join: all of it from eks:DescribeCluster."""

    name: str
    endpoint: str
    certificate_authority: str  # base64 PEM, exactly as EKS returns it
    service_cidr: str


def gang_taint(pool: str) -> str:
    return f"{keys.GANG_TAINT}={pool}:{TAINT_EFFECT}"


def kubelet_flags(*, labels: dict[str, str], pool: str) -> list[str]:
    joined = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return [f"--node-labels={joined}", f"--register-with-taints={gang_taint(pool)}"]


def node_config_yaml(*, join: ClusterJoin, labels: dict[str, str], pool: str) -> str:
    """The NodeConfig document; JSON-quoted scalars keep it valid YAML for any value."""
    flags = "".join(f"      - {json.dumps(f)}\n" for f in kubelet_flags(labels=labels, pool=pool))
    return (
        "---\n"
        "apiVersion: node.eks.aws/v1alpha1\n"
        "kind: NodeConfig\n"
        "spec:\n"
        "  cluster:\n"
        f"    name: {json.dumps(join.name)}\n"
        f"    apiServerEndpoint: {json.dumps(join.endpoint)}\n"
        f"    certificateAuthority: {json.dumps(join.certificate_authority)}\n"
        f"    cidr: {json.dumps(join.service_cidr)}\n"
        "  kubelet:\n"
        "    flags:\n"
        f"{flags}"
    )


def user_data(*, join: ClusterJoin, labels: dict[str, str], pool: str) -> str:
    """MIME multipart/mixed with one ``application/node.eks.aws`` part (plain text)."""
    body = node_config_yaml(join=join, labels=labels, pool=pool)
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"\n'
        "\n"
        f"--{BOUNDARY}\n"
        "Content-Type: application/node.eks.aws\n"
        "\n"
        f"{body}"
        "\n"
        f"--{BOUNDARY}--\n"
    )


def user_data_b64(*, join: ClusterJoin, labels: dict[str, str], pool: str) -> str:
    """Base64, as launch template data requires."""
    raw = user_data(join=join, labels=labels, pool=pool).encode()
    return base64.b64encode(raw).decode("ascii")

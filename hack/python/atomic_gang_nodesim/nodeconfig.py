"""Read EC2 user data the way nodeadm does: MIME multipart → NodeConfig → join parameters.

Pure. nodeadm decodes NodeConfig strictly (an unknown field is an error), needs
the cluster name, API server endpoint, CA and service CIDR, and hands the
kubelet flags through; a flag kubelet rejects means the node never registers.
Any of these failures is a :class:`NodeConfigError`: that node never joins.
"""

from __future__ import annotations

import base64
import binascii
import email
import email.policy
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from atomic_gang_nodesim.kubelet import FlagError, Taint, parse_flags

NODECONFIG_TYPE = "application/node.eks.aws"
API_VERSIONS = ("node.eks.aws/v1alpha1", "node.eks.aws/v1beta1")


class NodeConfigError(ValueError):
    """The user data would make nodeadm (or kubelet) fail: the node never joins."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterDetails(_Strict):
    name: str = ""
    apiServerEndpoint: str = ""
    certificateAuthority: str = ""
    cidr: str = ""
    enableOutpost: bool | None = None
    id: str | None = None


class KubeletOptions(_Strict):
    config: dict[str, Any] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)


class NodeConfigSpec(_Strict):
    cluster: ClusterDetails = Field(default_factory=ClusterDetails)
    kubelet: KubeletOptions = Field(default_factory=KubeletOptions)
    containerd: dict[str, Any] = Field(default_factory=dict)
    instance: dict[str, Any] = Field(default_factory=dict)
    featureGates: dict[str, bool] = Field(default_factory=dict)


class NodeConfig(_Strict):
    """The subset of nodeadm's ``NodeConfig`` schema a simulated join reads."""

    apiVersion: Literal["node.eks.aws/v1alpha1", "node.eks.aws/v1beta1"]
    kind: Literal["NodeConfig"]
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: NodeConfigSpec = Field(default_factory=NodeConfigSpec)


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinSpec:
    """What a node registers with: the cluster it joins, its labels and taints."""

    cluster: str
    endpoint: str
    certificate_authority: str
    cidr: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


def _documents(user_data: bytes) -> list[str]:
    """The NodeConfig YAML documents inside the user data (MIME or bare YAML)."""
    if not user_data.lstrip().upper().startswith(b"MIME-VERSION"):
        return [user_data.decode("utf-8", errors="replace")]
    msg = email.message_from_bytes(user_data, policy=email.policy.compat32)
    if not msg.is_multipart():
        raise NodeConfigError("MIME user data is not multipart")
    docs = []
    for part in msg.walk():
        if part.get_content_type() == NODECONFIG_TYPE:
            payload = part.get_payload(decode=True)
            docs.append(payload.decode("utf-8") if isinstance(payload, bytes) else str(payload))
    if not docs:
        raise NodeConfigError(f"no {NODECONFIG_TYPE} part in the MIME user data")
    return docs


def _configs(docs: list[str]) -> list[NodeConfig]:
    out = []
    for text in docs:
        try:
            loaded = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            raise NodeConfigError(f"NodeConfig is not valid YAML: {exc}") from exc
        for doc in loaded:
            if not isinstance(doc, dict):
                raise NodeConfigError("the user data is not a NodeConfig (a YAML mapping)")
            try:
                out.append(NodeConfig.model_validate(doc))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise NodeConfigError(f"NodeConfig rejected at {where}: {first['msg']}") from exc
    if not out:
        raise NodeConfigError("the user data holds no NodeConfig")
    return out


def _merge(configs: list[NodeConfig]) -> tuple[ClusterDetails, list[str]]:
    """nodeadm merges documents in order: later scalars win, flags accumulate."""
    cluster: dict[str, Any] = {}
    flags: list[str] = []
    for cfg in configs:
        cluster.update(cfg.spec.cluster.model_dump(exclude_defaults=True))
        flags.extend(cfg.spec.kubelet.flags)
    return ClusterDetails.model_validate(cluster), flags


def _check_ca(value: str) -> None:
    try:
        pem = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise NodeConfigError("certificateAuthority is not base64") from exc
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise NodeConfigError("certificateAuthority is not a base64 PEM certificate")


def _require(cluster: ClusterDetails) -> None:
    missing = [
        name
        for name in ("name", "apiServerEndpoint", "certificateAuthority", "cidr")
        if not getattr(cluster, name)
    ]
    if missing:
        raise NodeConfigError(f"NodeConfig spec.cluster lacks {', '.join(missing)}")
    if not cluster.apiServerEndpoint.startswith("https://"):
        raise NodeConfigError(f"apiServerEndpoint {cluster.apiServerEndpoint!r} is not https")
    _check_ca(cluster.certificateAuthority)


def parse_user_data(user_data: bytes) -> JoinSpec:
    """Join parameters from raw (already base64-decoded) user data."""
    cluster, flags = _merge(_configs(_documents(user_data)))
    _require(cluster)
    try:
        labels, taints = parse_flags(flags)
    except FlagError as exc:
        raise NodeConfigError(f"kubelet would not start: {exc}") from exc
    return JoinSpec(
        cluster=cluster.name,
        endpoint=cluster.apiServerEndpoint,
        certificate_authority=cluster.certificateAuthority,
        cidr=cluster.cidr,
        labels=labels,
        taints=taints,
    )

"""Leader election's configuration and the Lease record it reads and writes.

``record_of`` reduces a coordination.k8s.io/v1 Lease to the fields that decide
leadership; a change in any of them is what "observed" means. ``lease_body``
builds the next version, carrying the resourceVersion read so the write is
conditional.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import socket
from dataclasses import dataclass

from atomic_gang.settings import LeaderElection
from atomic_gang_provisioner.kube.objects import KubeObject, meta


def default_identity() -> str:
    """``<pod name or hostname>_<random>``: unique even across restarts of one pod."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{secrets.token_hex(4)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    lease_name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need 0 < retry_period < renew_deadline < lease_duration")

    @classmethod
    def from_settings(
        cls, s: LeaderElection, *, namespace: str, identity: str | None = None
    ) -> LeaderElectionConfig:
        """From the chart's ``leaderElection`` block; ``namespace`` is the fallback."""
        return cls(
            lease_name=s.lease_name,
            namespace=s.namespace or namespace,
            identity=identity or default_identity(),
            lease_duration=s.lease_duration_seconds,
            renew_deadline=s.renew_deadline_seconds,
            retry_period=s.retry_period_seconds,
        )


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    holder: str
    duration: float
    acquire_time: str
    renew_time: str
    transitions: int


def micro_time(at: dt.datetime | None = None) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    return (at or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record_of(lease: KubeObject) -> LeaseRecord:
    spec = lease.get("spec") or {}
    return LeaseRecord(
        holder=spec.get("holderIdentity") or "",
        duration=float(spec.get("leaseDurationSeconds") or 0),
        acquire_time=spec.get("acquireTime") or "",
        renew_time=spec.get("renewTime") or "",
        transitions=int(spec.get("leaseTransitions") or 0),
    )


def lease_body(
    *,
    old_lease: KubeObject | None,
    name: str,
    namespace: str,
    holder: str,
    duration_seconds: int,
    now: str,
    keep_acquire: bool,
) -> KubeObject:
    """The Lease to write: renewing (``keep_acquire``), taking over, or releasing (no holder)."""
    old = record_of(old_lease) if old_lease is not None else None
    taking_over = bool(holder) and not keep_acquire
    transitions = 0 if old is None else old.transitions + (1 if taking_over else 0)
    spec: dict[str, object] = {
        "leaseDurationSeconds": duration_seconds,
        "acquireTime": old.acquire_time if keep_acquire and old else now,
        "renewTime": now,
        "leaseTransitions": transitions,
    }
    if holder:
        spec["holderIdentity"] = holder
    metadata: dict[str, object] = {"name": name, "namespace": namespace}
    if old_lease is not None:
        metadata["resourceVersion"] = meta(old_lease)["resourceVersion"]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": spec,
    }

"""A typed, read-only view of a raw Kueue Workload dict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckState:
    name: str
    state: str
    message: str = ""
    last_transition_time: str = ""
    pod_set_updates: tuple[Mapping[str, Any], ...] = ()
    requeue_after_seconds: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadView:
    namespace: str
    name: str
    uid: str
    resource_version: str
    active: bool
    deleting: bool
    conditions: Mapping[str, str]  # type -> status
    checks: tuple[CheckState, ...]
    pod_sets: tuple[str, ...]
    owner_job: tuple[str, str] | None  # (name, uid)
    job_uid_label: str
    flavors: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def cond(self, type_: str) -> bool:
        return self.conditions.get(type_) == "True"

    @property
    def quota_reserved(self) -> bool:
        return self.cond("QuotaReserved")

    @property
    def in_play(self) -> bool:
        """Kueue's guard: act only while this is true (see kueue#3543)."""
        return (
            self.active
            and not self.deleting
            and self.quota_reserved
            and not self.cond("Finished")
            and not self.cond("Evicted")
        )

    def check(self, name: str) -> CheckState | None:
        return next((c for c in self.checks if c.name == name), None)


def _checks(status: Mapping[str, Any]) -> tuple[CheckState, ...]:
    out = []
    for c in status.get("admissionChecks") or []:
        out.append(
            CheckState(
                name=str(c.get("name", "")),
                state=str(c.get("state", "")),
                message=str(c.get("message", "")),
                last_transition_time=str(c.get("lastTransitionTime", "")),
                pod_set_updates=tuple(c.get("podSetUpdates") or ()),
                requeue_after_seconds=c.get("requeueAfterSeconds"),
            )
        )
    return tuple(out)


def _owner_job(meta: Mapping[str, Any]) -> tuple[str, str] | None:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/"):
            return str(ref.get("name", "")), str(ref.get("uid", ""))
    return None


def _flavors(status: Mapping[str, Any]) -> tuple[str, ...]:
    admission = status.get("admission") or {}
    names: set[str] = set()
    for psa in admission.get("podSetAssignments") or []:
        names.update(str(v) for v in (psa.get("flavors") or {}).values())
    return tuple(sorted(names))


def view(wl: Mapping[str, Any]) -> WorkloadView:
    meta = wl.get("metadata") or {}
    spec = wl.get("spec") or {}
    status = wl.get("status") or {}
    return WorkloadView(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        resource_version=str(meta.get("resourceVersion", "")),
        active=spec.get("active", True) is not False,
        deleting=bool(meta.get("deletionTimestamp")),
        conditions={
            str(c.get("type")): str(c.get("status")) for c in status.get("conditions") or []
        },
        checks=_checks(status),
        pod_sets=tuple(str(p.get("name", "")) for p in spec.get("podSets") or []),
        owner_job=_owner_job(meta),
        job_uid_label=str((meta.get("labels") or {}).get(JOB_UID_LABEL, "")),
        flavors=_flavors(status),
    )

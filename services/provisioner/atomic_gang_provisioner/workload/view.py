"""A typed, read-only view of a raw Kueue Workload dict.

``view`` reads the whole Workload at once into a frozen ``WorkloadView``: the decision
reads it many times. The cache's filter and index read only the check states
(``check_states``), on every Workload event, without building one.

The Workload cache keeps only what this reads (``slim``): a field read here for the
first time is kept there too, or it reads as absent from the cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from atomic_gang.devices import extended_requests
from atomic_gang.objects import MalformedJobError
from atomic_gang_provisioner.views.base import ObjectView, section

JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
ELASTIC_ANNOTATION = "kueue.x-k8s.io/elastic-job"  # Kueue copies it from the Job


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckState:
    name: str
    state: str
    message: str = ""
    last_transition_time: str = ""
    pod_set_updates: tuple[Mapping[str, Any], ...] = ()
    requeue_after_seconds: int | None = None
    retry_count: int = 0  # Kueue's count of the evictions this check's Retry caused


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerRef:
    """The Workload's controller owner: the object Kueue made it for."""

    api_version: str
    kind: str
    name: str
    uid: str

    @property
    def group(self) -> str:
        """The API group ("" for the core group), without the version."""
        return self.api_version.rpartition("/")[0]

    def describe(self) -> str:
        """``Job.batch default/name``-style, as ``kubectl`` names a kind in a group."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


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
    pod_sets: Mapping[str, int]  # PodSet name -> its count of pods
    # PodSet name -> the extended resources one of its pods asks for (nvidia.com/gpu, ...)
    pod_set_requests: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    owner: OwnerRef | None
    job_uid_label: str
    flavors: tuple[str, ...]
    # PodSet name -> the ResourceFlavors Kueue assigned it (once quota is reserved).
    pod_set_flavors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    elastic: bool = False  # a Workload slice of an elastic Job (Kueue's test: "true")

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
                retry_count=_count(c.get("retryCount")),
            )
        )
    return tuple(out)


def _count(raw: Any) -> int:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else 0


def _owner(meta: Mapping[str, Any]) -> OwnerRef | None:
    """The controller reference (Kueue sets one); a lone reference without the flag too."""
    refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, Mapping)]
    chosen = next((r for r in refs if r.get("controller") is True), None)
    if chosen is None and len(refs) == 1:
        chosen = refs[0]
    if chosen is None:
        return None
    return OwnerRef(
        api_version=str(chosen.get("apiVersion", "")),
        kind=str(chosen.get("kind", "")),
        name=str(chosen.get("name", "")),
        uid=str(chosen.get("uid", "")),
    )


def _requests(pod_set: Mapping[str, Any]) -> dict[str, int]:
    """What one pod of a PodSet asks of a Node ({} for a template we cannot read: Kueue
    validated it, so that is a Workload written by hand)."""
    try:
        return extended_requests(section(section(pod_set, "template"), "spec"))
    except MalformedJobError:
        return {}


def _pod_set_flavors(status: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    admission = status.get("admission") or {}
    return {
        str(psa.get("name", "")): tuple(sorted({str(v) for v in section(psa, "flavors").values()}))
        for psa in admission.get("podSetAssignments") or []
    }


def _flavors(status: Mapping[str, Any]) -> tuple[str, ...]:
    admission = status.get("admission") or {}
    names: set[str] = set()
    for psa in admission.get("podSetAssignments") or []:
        names.update(str(v) for v in section(psa, "flavors").values())
    return tuple(sorted(names))


def check_states(wl: Mapping[str, Any]) -> Sequence[Any]:
    """status.admissionChecks as they are, unread (``()`` when there are none)."""
    states: Sequence[Any] = ObjectView(wl).status.get("admissionChecks") or ()
    return states


def view(wl: Mapping[str, Any]) -> WorkloadView:
    obj = ObjectView(wl)
    meta, spec, status = obj.metadata, obj.spec, obj.status
    return WorkloadView(
        namespace=obj.namespace,
        name=obj.name,
        uid=obj.uid,
        resource_version=obj.resource_version,
        active=spec.get("active", True) is not False,
        deleting=obj.deleting,
        conditions={
            str(c.get("type")): str(c.get("status")) for c in status.get("conditions") or []
        },
        checks=_checks(status),
        pod_sets={
            str(p.get("name", "")): _count(p.get("count")) for p in spec.get("podSets") or []
        },
        owner=_owner(meta),
        job_uid_label=str(obj.labels.get(JOB_UID_LABEL, "")),
        flavors=_flavors(status),
        pod_set_flavors=_pod_set_flavors(status),
        pod_set_requests={str(p.get("name", "")): _requests(p) for p in spec.get("podSets") or []},
        elastic=obj.annotations.get(ELASTIC_ANNOTATION) == "true",
    )


CHECK_INDEX = "check"
OWNER_INDEX = "owner"


def check_index(obj: Mapping[str, Any]) -> Iterable[str]:
    """A Workload by the names of the AdmissionChecks in its status."""
    return tuple(str(s["name"]) for s in check_states(obj) if s.get("name"))


def owner_index(obj: Mapping[str, Any]) -> Iterable[str]:
    """A Workload by the uid of each of its ownerReferences (its Job's, say)."""
    refs = section(obj, "metadata").get("ownerReferences") or ()
    return tuple(str(ref["uid"]) for ref in refs if "uid" in ref)

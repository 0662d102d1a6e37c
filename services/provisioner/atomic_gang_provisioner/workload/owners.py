"""The Workload's owner: which kinds we serve, the owner judged once per version, and
what we say when it is missing.

Kueue makes a Workload for the object it admits and names it as the Workload's
controller owner. We provision for the kinds in ``SERVED`` only; a Workload on our
check with no owner (a bare Workload) or with an owner of another kind is Rejected
at once, so that Kueue deactivates it and frees its quota instead of holding it for
a Workload we will never serve. An owner that cannot be read is waited for, but
only for ``ownerWaitSeconds``.

A JobSet or a TrainJob is served like a Job: Kueue makes one Workload for it with one
PodSet per replicatedJob (of the JobSet, or of the one the TrainJob's runtime builds;
``podsets`` maps them onto the gang).

Judging an owner (:func:`judge`) runs every rule the webhook runs; its verdict, a
:class:`JudgedOwner`, is what the decision reads, kept per owner version
(``judgments.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from atomic_gang import GangSettings, GangValidationError, keys
from atomic_gang.gang_object import Gang, kind_of, validate
from atomic_gang.objects import MalformedJobError
from atomic_gang_provisioner.timestamps import parse_rfc3339
from atomic_gang_provisioner.views.owner import Owner
from atomic_gang_provisioner.workload import podsets
from atomic_gang_provisioner.workload.view import CheckState, OwnerRef, WorkloadView

# (API group, kind) of the owners we serve.
SERVED: tuple[tuple[str, str], ...] = (
    ("batch", "Job"),
    ("jobset.x-k8s.io", "JobSet"),
    ("trainer.kubeflow.org", "TrainJob"),
)
SERVED_TEXT = (
    "batch/v1 Job, a jobset.x-k8s.io/v1alpha2 JobSet or a trainer.kubeflow.org/v1alpha1 TrainJob"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgedOwner:
    """What the Workload side reads of its owner: who it is, which pool it names, and
    the verdict on it (the gang, or why it is none)."""

    api_version: str
    kind: str  # "Job", "JobSet" or "TrainJob"
    namespace: str
    name: str
    uid: str
    pool: str | None  # its pool label
    gang: Gang | None = None  # the valid gang
    invalid: str = ""  # why it is no valid gang ("" with no gang: it asks for none)

    @property
    def named(self) -> str:
        """``JobSet/allreduce``: the object the gang is for, as pools and messages name it."""
        return f"{self.kind}/{self.name}"

    @property
    def target(self) -> dict[str, Any]:
        """The owner as an Event's involved object."""
        meta = {"namespace": self.namespace, "name": self.name, "uid": self.uid}
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta}


def judge(owner: Mapping[str, Any], settings: GangSettings) -> JudgedOwner:
    """Every rule of a gang object, with the allowlists of its namespace in ``settings``."""
    api_version, kind = kind_of(owner)
    seen = Owner(owner)
    gang: Gang | None = None
    invalid = ""
    try:
        gang = validate(owner, settings)
    except (GangValidationError, MalformedJobError) as err:
        invalid = str(err)
    return JudgedOwner(
        api_version=api_version,
        kind=kind,
        namespace=seen.namespace,
        name=seen.name,
        uid=seen.uid,
        pool=seen.pool,
        gang=gang,
        invalid=invalid,
    )


@dataclass(frozen=True, slots=True)
class Served:
    """The owner is a valid gang of a kind we serve, and the Workload's PodSets hold it:
    ``requests``, what its largest gang pod asks of a Node."""

    gang: Gang
    requests: dict[str, int]


@dataclass(frozen=True, slots=True)
class Refused:
    """The Workload can never be served as it is: its check is Rejected with this."""

    message: str


@dataclass(frozen=True, slots=True)
class Awaited:
    """The owner could not be read: its check stays Pending, and the read is tried again."""

    message: str
    requeue_after: float


Verdict = Served | Refused | Awaited


def verdict(
    wl: WorkloadView,
    owner: JudgedOwner | None,
    *,
    error: str,
    current: CheckState,
    now: datetime,
    settings: GangSettings,
    claiming_flavors: Collection[str],
) -> Verdict:
    """Whether the Workload's owner can be served: of a kind we serve, not elastic, read
    (``error``: why it could not be, "" when it is gone), a valid gang, and one the
    Workload's PodSets hold (``podsets.fit``; ``claiming_flavors``: its ResourceFlavors
    that claim gang nodes)."""
    why = unserved(wl, check=current.name, found_by_label=owner is not None)
    if why:
        return Refused(why)
    if wl.elastic:
        return Refused(_elastic(wl, current))
    if owner is None and not error:
        return Refused(gone(wl))
    if owner is None:
        limit = settings.owner_wait_seconds
        why, left = waited_out(wl, current, error=error, now=now, limit_seconds=limit)
        if why:
            return Refused(why)
        return Awaited(waiting(wl, limit_seconds=limit), min(5.0, left))
    if owner.invalid:
        return Refused(f"Invalid gang {owner.kind}: {owner.invalid}")
    if owner.gang is None:
        return Refused(_not_a_gang(owner.kind, settings))
    fit = podsets.fit(owner.gang, wl, claiming_flavors)
    if isinstance(fit, podsets.Misfit):
        return Refused(fit.message)
    return Served(owner.gang, fit.requests)


def _elastic(wl: WorkloadView, current: CheckState) -> str:
    return (
        f'Workload {wl.key} is elastic ({keys.ELASTIC_JOB}: "true"): a gang\'s N nodes '
        "are launched once, all or nothing, and cannot follow a Job that grows or shrinks. "
        f"Remove the annotation from the Job, or use a queue without the {current.name} check"
    )


def _not_a_gang(kind: str, settings: GangSettings) -> str:
    return (
        f"The {kind} has no atomic-gang annotations or pool label, but its queue uses the "
        f"{settings.controller_name} admission check; add the {keys.POOL} label and the "
        f"{keys.COUNT} and {keys.INSTANCE_TYPE} annotations, or use another queue"
    )


def unserved(wl: WorkloadView, *, check: str, found_by_label: bool) -> str:
    """Why this Workload's owner can never be served ("" when it can)."""
    owner = wl.owner
    if owner is None:
        if found_by_label:
            return ""  # an owner reference dropped, the Job still named by Kueue's label
        return (
            f"Workload {wl.key} has no owner: the {check} check provisions gang nodes "
            f"only for Workloads that Kueue creates for a {SERVED_TEXT}; a bare Workload "
            "cannot get them. Rejected so that Kueue frees its quota; submit the gang as "
            "a Job, a JobSet or a TrainJob instead"
        )
    if (owner.group, owner.kind) in SERVED:
        return ""
    return (
        f"Workload {wl.key} is owned by {_named(owner)}: the {check} check serves only "
        f"Workloads of a {SERVED_TEXT}, not of a {owner.describe()}. Rejected so that "
        "Kueue frees its quota; use a LocalQueue whose ClusterQueue does not carry this "
        "check for it"
    )


def gone(wl: WorkloadView) -> str:
    """The owner was read and is not there (deleted, or replaced under its name)."""
    owner = wl.owner
    named = _named(owner) if owner is not None else "its owner Job"
    return f"The owner of Workload {wl.key}, {named}, no longer exists; nothing to provision"


def waited_out(
    wl: WorkloadView, current: CheckState, *, error: str, now: datetime, limit_seconds: int
) -> tuple[str, float]:
    """("" and seconds left to wait) while an unreadable owner is still within its
    bound, counted from our check's last transition (to Pending); else (the reason to
    reject, 0)."""
    try:
        since = parse_rfc3339(current.last_transition_time)
    except ValueError:  # absent or garbled: the wait starts now
        since = now
    waited = now - since
    left = limit_seconds - waited.total_seconds()
    if left > 0:
        return "", left
    owner = wl.owner
    named = _named(owner) if owner is not None else "its owner Job"
    return (
        f"The owner of Workload {wl.key}, {named}, could not be read for "
        f"{limit_seconds}s (ownerWaitSeconds): {error}. Rejected so that Kueue frees its "
        f"quota; reactivate the Workload (spec.active: true) once the {_kind(owner)} can be read"
    ), 0.0


def waiting(wl: WorkloadView, *, limit_seconds: int) -> str:
    owner = wl.owner
    named = _named(owner) if owner is not None else "the owner Job"
    return (
        f"Waiting for {named} to be readable; this Workload is rejected if it is not "
        f"within {limit_seconds}s of its check turning Pending"
    )


def _kind(owner: OwnerRef | None) -> str:
    return owner.kind if owner is not None else "Job"


def _named(owner: OwnerRef) -> str:
    return f"{owner.describe()} {owner.name!r}"

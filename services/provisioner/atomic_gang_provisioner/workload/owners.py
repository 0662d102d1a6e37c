"""Which Workloads we can serve, judged by their owner, before anything else is read.

Kueue makes a Workload for the object it admits and names it as the Workload's
controller owner. We provision for the kinds in ``SERVED`` only; a Workload on our
check with no owner (a bare Workload) or with an owner of another kind is Rejected
at once, so that Kueue deactivates it and frees its quota instead of holding it for
a Workload we will never serve. An owner that cannot be read is waited for, but
only for ``ownerWaitSeconds``.

A JobSet or a TrainJob is served like a Job: Kueue makes one Workload for it with one
PodSet per replicatedJob (of the JobSet, or of the one the TrainJob's runtime builds;
``podsets`` maps them onto the gang).
"""

from __future__ import annotations

from datetime import datetime

from atomic_gang_provisioner.timestamps import parse_rfc3339
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

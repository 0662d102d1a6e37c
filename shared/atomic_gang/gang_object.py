"""One entry point for every kind of gang object we serve: a batch/v1 Job or a
jobset.x-k8s.io/v1alpha2 JobSet. The webhook, ``atomic-gang validate`` and the
provisioner judge an object through here, whatever its kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from atomic_gang.job import Findings, review_job, review_job_update
from atomic_gang.jobset import API_VERSION as JOBSET_API
from atomic_gang.jobset import KIND as JOBSET_KIND
from atomic_gang.jobset import review_jobset, review_jobset_update
from atomic_gang.objects import MalformedJobError
from atomic_gang.settings import GangSettings

Review = Callable[..., Findings | None]
KINDS: dict[tuple[str, str], tuple[Review, Review]] = {  # kind -> (create, update)
    ("batch/v1", "Job"): (review_job, review_job_update),
    (JOBSET_API, JOBSET_KIND): (review_jobset, review_jobset_update),
}
SERVED = ", ".join(f"{api} {kind}" for api, kind in KINDS)


def kind_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(apiVersion, kind); a Job that names neither (a template) is a Job."""
    return str(obj.get("apiVersion", "batch/v1")), str(obj.get("kind", "Job"))


def _reviews(obj: Mapping[str, Any]) -> tuple[Review, Review]:
    found = KINDS.get(kind_of(obj))
    if found is None:
        api, kind = kind_of(obj)
        raise MalformedJobError(f"{api} {kind} is not a kind we serve ({SERVED})")
    return found


def review(
    obj: Mapping[str, Any], settings: GangSettings, *, namespace: str | None = None
) -> Findings | None:
    """The CREATE verdict: None for an object that is not a gang and reaches for no gang
    node, else its violations and warnings."""
    create, _ = _reviews(obj)
    return create(obj, settings, namespace=namespace)


def review_update(
    old: Mapping[str, Any], new: Mapping[str, Any], settings: GangSettings, *, user: str
) -> Findings | None:
    """The UPDATE verdict (both versions are of one kind)."""
    _, update = _reviews(new)
    return update(old, new, settings, user=user)

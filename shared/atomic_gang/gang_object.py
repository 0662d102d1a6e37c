"""One entry point for every kind of gang object we serve: a batch/v1 Job, a
jobset.x-k8s.io/v1alpha2 JobSet or a trainer.kubeflow.org/v1alpha1 TrainJob. The
webhook, ``atomic-gang validate`` and the provisioner judge an object through here,
whatever its kind. The webhook and the CLI also judge the Trainer's runtimes here: no
gang, but their templates reach every TrainJob's pods."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from atomic_gang.job import Findings, review_job, review_job_update, validate_job
from atomic_gang.jobset import API_VERSION as JOBSET_API
from atomic_gang.jobset import KIND as JOBSET_KIND
from atomic_gang.jobset import review_jobset, review_jobset_update, validate_jobset
from atomic_gang.objects import MalformedJobError
from atomic_gang.settings import GangSettings
from atomic_gang.spec import GangSpec
from atomic_gang.trainjob import API_VERSION as TRAINER_API
from atomic_gang.trainjob import KIND as TRAINJOB_KIND
from atomic_gang.trainjob import (
    RUNTIME_KINDS,
    review_runtime,
    review_runtime_update,
    review_trainjob,
    review_trainjob_update,
    validate_trainjob,
)

Review = Callable[..., Findings | None]
KINDS: dict[tuple[str, str], tuple[Review, Review]] = {  # kind -> (create, update)
    ("batch/v1", "Job"): (review_job, review_job_update),
    (JOBSET_API, JOBSET_KIND): (review_jobset, review_jobset_update),
    (TRAINER_API, TRAINJOB_KIND): (review_trainjob, review_trainjob_update),
}
SERVED = ", ".join(f"{api} {kind}" for api, kind in KINDS)
# Reviewed, never a gang: TrainingRuntime and ClusterTrainingRuntime.
RUNTIMES: dict[tuple[str, str], tuple[Review, Review]] = {
    (TRAINER_API, kind): (review_runtime, review_runtime_update) for kind in RUNTIME_KINDS
}
REVIEWED = ", ".join(f"{api} {kind}" for api, kind in (*KINDS, *RUNTIMES))


def kind_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(apiVersion, kind); a Job that names neither (a template) is a Job."""
    return str(obj.get("apiVersion", "batch/v1")), str(obj.get("kind", "Job"))


def _reviews(obj: Mapping[str, Any]) -> tuple[Review, Review]:
    found = KINDS.get(kind_of(obj))
    if found is None:
        api, kind = kind_of(obj)
        raise MalformedJobError(f"{api} {kind} is not a kind we serve ({SERVED})")
    return found


def _reviewed(obj: Mapping[str, Any]) -> tuple[Review, Review]:
    """A gang kind's reviews, or a runtime's."""
    found = KINDS.get(kind_of(obj)) or RUNTIMES.get(kind_of(obj))
    if found is None:
        api, kind = kind_of(obj)
        raise MalformedJobError(f"{api} {kind} is not a kind we review ({REVIEWED})")
    return found


def review(
    obj: Mapping[str, Any],
    settings: GangSettings,
    *,
    namespace: str | None = None,
    user: str = "",
) -> Findings | None:
    """The CREATE verdict: None for an object that is not a gang and reaches for no gang
    node, else its violations and warnings. ``user`` is who creates it ("" when no one
    does, as in ``atomic-gang validate``)."""
    create, _ = _reviewed(obj)
    return create(obj, settings, namespace=namespace, user=user)


def review_update(
    old: Mapping[str, Any], new: Mapping[str, Any], settings: GangSettings, *, user: str
) -> Findings | None:
    """The UPDATE verdict (both versions are of one kind)."""
    _, update = _reviewed(new)
    return update(old, new, settings, user=user)


JOB_POD_SET = "main"  # the one PodSet Kueue makes for a batch/v1 Job


class Gang(NamedTuple):
    """A valid gang object of any kind we serve, as the provisioner needs it."""

    kind: str  # "Job", "JobSet" or "TrainJob"
    spec: GangSpec
    # The gang roles: the PodSets of its Workload whose pods each get one gang node
    # ("main" for a Job, replicatedJob names for a JobSet or a TrainJob's runtime).
    # Their pods and what each
    # asks of a Node are read from the Workload's PodSets, as Kueue admits them.
    roles: tuple[str, ...]


def validate(obj: Mapping[str, Any], settings: GangSettings) -> Gang | None:
    """None for an object with no gang keys; the gang; or GangValidationError with every
    violation. MalformedJobError for a broken object or a kind we do not serve."""
    _reviews(obj)  # refuses a kind we do not serve
    _api, kind = kind_of(obj)
    if kind == JOBSET_KIND:
        found = validate_jobset(obj, settings)
        if found is None:
            return None
        return Gang(kind, found.spec, tuple(r.name for r in found.roles))
    if kind == TRAINJOB_KIND:
        trained = validate_trainjob(obj, settings)
        return None if trained is None else Gang(kind, trained.spec, trained.roles)
    spec = validate_job(obj, settings)
    if spec is None:
        return None
    return Gang(kind, spec, (JOB_POD_SET,))

"""Job-level rules on top of the annotations: the queue label, count parity, the pod
template's reach for gang nodes (and the JobSet controller's pinned Jobs), one pod per
node, and on UPDATE the immutability of the gang contract.

Input is a raw batch/v1 Job as JSON-decoded dicts. A structurally broken object
raises :class:`MalformedJobError` (a bad request, not a bad Job).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import Any, NamedTuple

from atomic_gang import keys, patterns, placement, template
from atomic_gang.errors import Collector, GangValidationError, Violation, clip
from atomic_gang.keys import PREFIX
from atomic_gang.objects import MalformedJobError, field_list, field_map, items, pod_spec
from atomic_gang.parse import annotation_field, gang_rules, label_field, ours
from atomic_gang.pool_access import listed_for
from atomic_gang.settings import GangSettings
from atomic_gang.spec import GangSpec

# A JobSet's controlling ownerReference: (jobset.API_VERSION, jobset.KIND), which imports
# this module.
JOBSET_OWNER = ("jobset.x-k8s.io/v1alpha2", "JobSet")


class Findings(NamedTuple):
    """A review's verdict: the first violations in full, how many more, and warnings."""

    violations: tuple[Violation, ...]
    omitted: int = 0
    warnings: tuple[str, ...] = ()


class _Maps(NamedTuple):
    annotations: dict[str, str]  # ours only
    labels: dict[str, str]  # ours only
    queue: str  # the Kueue queue-name label, "" when absent
    elastic: str | None  # Kueue's elastic-job annotation, None when absent


def gang_map(meta: Mapping[str, Any], key: str, *, trim: bool) -> dict[str, str]:
    """The entries under our prefix of metadata.labels / metadata.annotations, values
    trimmed when ``trim``. Every entry is type-checked (strings to strings); only ours
    are kept, since no rule reads another key (a Job can carry kilobytes of them). Past
    MAX_GANG_KEYS of ours only the first MAX_GANG_KEYS + 1 are kept: enough for the
    TooManyKeys verdict, and a 6,000-key storm costs a C-speed count, not a dict."""
    value = field_map(meta, key, "metadata")
    try:  # the type check at C speed: join raises TypeError on any non-string
        names = "".join(value)
        "".join(value.values())
    except TypeError:
        raise MalformedJobError(f"metadata.{key} must map strings to strings") from None
    if names.count(PREFIX) > keys.MAX_GANG_KEYS:  # an upper bound of our keys
        first = islice((k for k in value if k.startswith(PREFIX)), keys.MAX_GANG_KEYS + 1)
        value = {k: value[k] for k in first}
    if trim:
        return ours(value)
    return {k: v for k, v in value.items() if k.startswith(PREFIX)}


def read_maps(job: Mapping[str, Any], *, trim: bool) -> _Maps:
    if not isinstance(job, Mapping):
        raise MalformedJobError("the object must be a JSON object")
    meta = field_map(job, "metadata", "object")
    queue = str(field_map(meta, "labels", "metadata").get(keys.QUEUE_NAME_LABEL) or "").strip()
    elastic = field_map(meta, "annotations", "metadata").get(keys.ELASTIC_JOB)
    return _Maps(
        gang_map(meta, "annotations", trim=trim),
        gang_map(meta, "labels", trim=trim),
        queue,
        None if elastic is None else str(elastic),
    )


def _int_field(spec: Mapping[str, Any], name: str) -> int | None:
    value = spec.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedJobError(f"spec.{name} must be an integer")
    return value


def _parity(spec: Mapping[str, Any], raw_count: str, out: Collector) -> None:
    if not patterns.COUNT.match(raw_count):
        return  # the count rule reports it
    count = int(raw_count)
    parallelism = _int_field(spec, "parallelism")
    completions = _int_field(spec, "completions")
    effective = 1 if parallelism is None else parallelism
    if effective != count:
        out.add(
            keys.COUNT,
            "CountMismatch",
            f"must equal spec.parallelism ({effective})",
            str(count),
            "Kueue sizes the gang from parallelism; set both to N",
        )
    if completions is not None and completions != count:
        out.add(
            keys.COUNT,
            "CountMismatch",
            f"must equal spec.completions ({completions})",
            str(count),
            "set completions to N as well, or leave it unset",
        )


def check_queued(found: _Maps, settings: GangSettings, out: Collector) -> None:
    if found.queue or settings.manage_jobs_without_queue_name:
        return
    out.add(
        keys.QUEUE_NAME_LABEL,
        "NotQueued",
        "a gang Job needs the Kueue queue label, or Kueue ignores it and its pods start "
        "at once on ordinary nodes, with no gang",
        None,
        f"add the label {keys.QUEUE_NAME_LABEL}: <local-queue>, or set "
        "manageJobsWithoutQueueName where Kueue manages every Job",
        label_field(keys.QUEUE_NAME_LABEL),
    )


def _no_gang_roles(found: _Maps, out: Collector) -> None:
    """gang-roles picks replicatedJobs of a JobSet or a TrainJob; a Job's pods are all the gang."""
    if keys.GANG_ROLES in found.annotations:
        out.add(
            keys.GANG_ROLES,
            "InvalidGangRoles",
            "applies to JobSets and TrainJobs only: every pod of a Job is part of the gang",
            found.annotations[keys.GANG_ROLES],
            f"remove {keys.GANG_ROLES}",
        )


def check_pool_reserved(
    found: _Maps, namespace: str | None, settings: GangSettings, out: Collector
) -> None:
    """A pool name the admin lists for other namespaces (poolNamespaces) is theirs: said
    at apply time, naming only the setting (the provisioner would reject the Workload)."""
    pool = found.labels.get(keys.POOL)
    if namespace is None or not pool:
        return
    listed = listed_for(pool, settings.pool_namespaces)
    if listed is None or namespace in listed:
        return
    out.add(
        keys.POOL,
        "PoolReserved",
        "is reserved for other namespaces by the cluster's admin (poolNamespaces)",
        pool,
        "use a pool label of your own",
        label_field(keys.POOL),
    )


def check_elastic(found: _Maps, out: Collector) -> None:
    """A gang's N is fixed: Kueue's elastic Jobs (Workload slices) resize a running Job,
    and a new slice would ask for nodes the gang never launched. Only "false" says no."""
    if found.elastic is None or found.elastic.strip() == "false":
        return
    out.add(
        keys.ELASTIC_JOB,
        "ElasticGang",
        "a gang's N nodes are launched once, all or nothing, and cannot grow or shrink "
        "with an elastic Job",
        found.elastic,
        f"remove the {keys.ELASTIC_JOB} annotation (a gang Job keeps its size), or run "
        "the elastic Job on a queue without the atomic-gang check",
        annotation_field(keys.ELASTIC_JOB),
    )


def _spreads(
    job: Mapping[str, Any],
    spec: Mapping[str, Any],
    pod: Mapping[str, Any],
    s: GangSettings,
    out: Collector,
) -> str:
    """The one-pod-per-node warning ("" when the Job spreads); a violation instead
    when requireOnePodPerNode is set."""
    if placement.one_pod_per_node(job, spec, pod):
        return ""
    n = _int_field(spec, "parallelism") or 1
    return packed_verdict(placement.WARNING.format(n=n), "spec.template.spec.affinity", s, out)


def packed_verdict(warning: str, field: str, s: GangSettings, out: Collector) -> str:
    """Pods that may share nodes: the warning, or with requireOnePodPerNode a violation at
    ``field`` (and no warning)."""
    if not s.require_one_pod_per_node:
        return warning
    out.add(
        field,
        "PodsNotSpread",
        "nothing keeps the gang's pods on distinct nodes (requireOnePodPerNode)",
        None,
        warning.removeprefix("atomic-gang: "),
        field,
    )
    return ""


def controllers(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(apiVersion, kind) of each ownerReference marked ``controller`` (the API server
    allows at most one)."""
    meta = field_map(obj, "metadata", "object")
    where = "metadata.ownerReferences"
    refs = items(field_list(meta, "ownerReferences", "metadata"), where)
    return [
        (str(r.get("apiVersion", "")), str(r.get("kind", "")))
        for r in refs
        if r.get("controller") is True
    ]


def by_jobset_controller(job: Mapping[str, Any], user: str, settings: GangSettings) -> bool:
    """The JobSet controller (``settings.job_set_username``) writing a Job that a JobSet
    controls: the one writer besides Kueue whose Job templates may carry gang node
    claims, pinned (``template.pinned``). It copies them from its JobSet's replicatedJob
    templates, where only Kueue can have put them: the webhook refuses them in a JobSet
    on CREATE, and on UPDATE by anyone but Kueue. The owner alone proves nothing (the
    writer sets ownerReferences), the requester is what tenants cannot forge: a
    tenant's Job with a JobSet owner and the JobSet's labels is judged like any other."""
    return user == settings.job_set_username and controllers(job) == [JOBSET_OWNER]


def review_job(
    job: Mapping[str, Any],
    settings: GangSettings,
    *,
    namespace: str | None = None,
    user: str = "",
) -> Findings | None:
    """The CREATE verdict: None for a Job that is not ours (no gang keys, and a template
    that does not reach for gang nodes), else every violation (none when valid) and
    warnings. With the Job's ``namespace``, a pool name the admin reserved for other
    namespaces is refused too. ``user`` is who creates it ("" when no one does, as in
    ``atomic-gang validate``): the JobSet controller may create its JobSet's Jobs pinned
    to the gang (``by_jobset_controller``). MalformedJobError for a broken object."""
    found = _collect(job, settings, namespace, may_pin=by_jobset_controller(job, user, settings))
    if found is None:
        return None
    out, _resolved, warning = found
    return Findings(tuple(out.violations), out.omitted, (warning,) if warning else ())


def validate_job(job: Mapping[str, Any], settings: GangSettings) -> GangSpec | None:
    """None for a Job with no gang keys; a GangSpec; or GangValidationError with all."""
    resolved = _resolved(job, settings)
    return None if resolved is None else GangSpec(pool=resolved[0], **resolved[1])


def _resolved(job: Mapping[str, Any], settings: GangSettings) -> tuple[str, dict[str, Any]] | None:
    found = _collect(job, settings)
    if found is None:
        return None
    out, resolved, _warning = found
    if out.violations or resolved is None:
        raise GangValidationError(out.violations, out.omitted)
    return resolved


def _collect(
    job: Mapping[str, Any],
    settings: GangSettings,
    namespace: str | None = None,
    *,
    may_pin: bool = False,
) -> tuple[Collector, tuple[str, dict[str, Any]] | None, str] | None:
    """None when not ours, else (violations, resolved fields or None, warning)."""
    found = read_maps(job, trim=True)
    spec = field_map(job, "spec", "object")
    pod = pod_spec(spec)
    out = Collector()
    if not found.annotations and not found.labels:
        template.check_create(pod, out, may_pin=may_pin)
        return (out, None, "") if out.violations else None
    resolved = gang_rules(found.annotations, found.labels, settings, out)
    _no_gang_roles(found, out)
    check_pool_reserved(found, namespace, settings, out)
    check_queued(found, settings, out)
    check_elastic(found, out)
    # Parity even when other rules failed: every violation at once.
    _parity(spec, found.annotations.get(keys.COUNT, ""), out)
    template.check_create(pod, out, may_pin=may_pin)
    return out, resolved, _spreads(job, spec, pod, settings, out)


def review_job_update(
    old: Mapping[str, Any], new: Mapping[str, Any], settings: GangSettings, *, user: str
) -> Findings | None:
    """The UPDATE verdict: None when neither version is ours. The gang keys are
    immutable once Kueue sized the Job, the queue label and count parity must still
    hold, and only Kueue (``settings.kueue_username``) may add gang node claims, or the
    JobSet controller pinning its JobSet's Job as it resumes it (``by_jobset_controller``)."""
    was, now = read_maps(old, trim=False), read_maps(new, trim=False)
    old_spec, new_spec = field_map(old, "spec", "oldObject"), field_map(new, "spec", "object")
    out = Collector()
    template.check_update(
        pod_spec(old_spec),
        pod_spec(new_spec),
        by_kueue=user == settings.kueue_username,
        may_pin=by_jobset_controller(new, user, settings),
        out=out,
    )
    gang = bool(was.annotations or was.labels or now.annotations or now.labels)
    if not gang:
        return Findings(tuple(out.violations), out.omitted) if out.violations else None
    check_immutable(was, now, out)
    if now.annotations or now.labels:
        check_queued(now, settings, out)
        check_elastic(now, out)
        _parity(new_spec, now.annotations.get(keys.COUNT, "").strip(), out)
    return Findings(tuple(out.violations), out.omitted)


def check_immutable(was: _Maps, now: _Maps, out: Collector) -> None:
    pairs = (
        (was.annotations, now.annotations, annotation_field),
        (was.labels, now.labels, label_field),
    )
    for old, new, where in pairs:
        for key in sorted({*old, *new}):
            if old.get(key) != new.get(key):
                shown = None if key not in old else clip(old[key])
                out.add(
                    key,
                    "ImmutableGangField",
                    f"cannot change after creation (was {shown!r})",
                    new.get(key),
                    "Kueue has already sized the Workload; delete and recreate the Job instead",
                    where(key),
                )

"""JobSet-level rules: which replicatedJobs are the gang, count parity over them, their
pod templates' reach for gang nodes, one pod per node, and on UPDATE the same
immutability as for a Job.

Kueue admits a JobSet as one Workload with one PodSet per replicatedJob, named after
it, of ``replicas × min(parallelism, completions)`` pods. The gang is the pods of the
replicatedJobs that ``atomic-gang.k8s.aws/gang-roles`` lists (default: all of them):
each gets one gang node; the others (a CPU driver, a coordinator) schedule on the
cluster's ordinary nodes. Everything on the JobSet's metadata means what it means on
a Job. The JobSet the Kubeflow Trainer builds for a TrainJob is no gang of its own (the
TrainJob is); it may carry Kueue's claims from the Trainer only (``by_trainer``).

Input is a raw ``jobset.x-k8s.io/v1alpha2`` JobSet as JSON-decoded dicts; a
structurally broken object raises :class:`MalformedJobError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from atomic_gang import keys, patterns, placement, template
from atomic_gang.errors import Collector, GangValidationError, Violation, clip
from atomic_gang.job import (
    Findings,
    check_elastic,
    check_immutable,
    check_pool_reserved,
    check_queued,
    controllers,
    packed_verdict,
    read_maps,
)
from atomic_gang.objects import MalformedJobError, field_list, field_map, field_str, items
from atomic_gang.parse import gang_rules
from atomic_gang.settings import GangSettings
from atomic_gang.spec import GangSpec

API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
ROLE_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
MAX_ROLES = 64  # JobSet allows far fewer in practice; bounds the work of a hostile one
# A TrainJob's controlling ownerReference: (trainjob.API_VERSION, trainjob.KIND), which
# imports this module.
TRAINJOB_OWNER = ("trainer.kubeflow.org/v1alpha1", "TrainJob")


class Role(NamedTuple):
    """One replicatedJob as Kueue sizes its PodSet."""

    position: int  # in spec.replicatedJobs
    name: str
    replicas: int
    parallelism: int
    pods: int  # replicas × min(parallelism, completions): the PodSet's count
    job_spec: Mapping[str, Any]  # its spec.replicatedJobs[i].template.spec

    @property
    def field(self) -> str:
        return f"spec.replicatedJobs[{self.position}]"

    @property
    def pod(self) -> Mapping[str, Any]:
        return field_map(field_map(self.job_spec, "template", self.field), "spec", self.field)

    def describe(self) -> str:
        return f"{self.name}: {self.replicas} replicas × {self.parallelism} = {self.pods} pods"


def _int(obj: Mapping[str, Any], key: str, where: str, default: int) -> int:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedJobError(f"{where}.{key} must be a non-negative integer")
    return value


def roles(jobset: Mapping[str, Any]) -> tuple[Role, ...]:
    """The replicatedJobs, as Kueue counts their pods."""
    spec = field_map(jobset, "spec", "object")
    raw = items(field_list(spec, "replicatedJobs", "spec"), "spec.replicatedJobs")
    if len(raw) > MAX_ROLES:
        raise MalformedJobError(f"spec.replicatedJobs has more than {MAX_ROLES} entries")
    out = []
    for i, rj in enumerate(raw):
        where = f"spec.replicatedJobs[{i}]"
        name = field_str(rj, "name", where)
        job_spec = field_map(field_map(rj, "template", where), "spec", f"{where}.template")
        replicas = _int(rj, "replicas", where, 1)
        parallelism = _int(job_spec, "parallelism", f"{where}.template.spec", 1)
        completions = _int(job_spec, "completions", f"{where}.template.spec", parallelism)
        pods = replicas * min(parallelism, completions)
        out.append(Role(i, name, replicas, parallelism, pods, job_spec))
    return tuple(out)


def gang_roles(raw: str | None, found: tuple[Role, ...], out: Collector) -> tuple[Role, ...]:
    """The roles ``gang-roles`` names (all when unset); unknown or repeated names are
    violations naming them and the roles that exist."""
    if raw is None:
        return found
    names = [n.strip() for n in raw.split(",") if n.strip()]
    by_name = {r.name: r for r in found}
    existing = ", ".join(by_name) or "none"
    unknown = [n for n in names if n not in by_name]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if not names or unknown or repeated:
        what = (
            f"names no replicatedJob: {', '.join(repr(n) for n in unknown)}"
            if unknown
            else f"repeats {', '.join(repeated)}"
            if repeated
            else "is empty"
        )
        out.add(
            keys.GANG_ROLES,
            "InvalidGangRoles",
            f"{what} (the JobSet's replicatedJobs: {existing})",
            raw,
            "a comma-separated list of replicatedJob names whose pods each get a gang node; "
            "leave it unset for all of them",
        )
        return ()
    return tuple(by_name[n] for n in names)


def _parity(gang: tuple[Role, ...], raw_count: str, out: Collector) -> None:
    if not gang or not patterns.COUNT.match(raw_count):
        return  # the count and gang-roles rules report those
    pods = sum(r.pods for r in gang)
    if pods == int(raw_count):
        return
    out.add(
        keys.COUNT,
        "CountMismatch",
        f"must equal the pods of the gang roles ({'; '.join(r.describe() for r in gang)}): {pods}",
        raw_count,
        f"set {keys.COUNT} to {pods}, or change {keys.GANG_ROLES} or the replicas",
    )


def _moved(found: list[Violation], role: Role, start: int) -> None:
    """Template violations name the Job template's path; point them at the role's."""
    for i in range(start, len(found)):
        v = found[i]
        if v.field.startswith("spec.template"):
            found[i] = v._replace(field=f"{role.field}.template.{v.field}")


def by_trainer(jobset: Mapping[str, Any], user: str, settings: GangSettings) -> bool:
    """The Kubeflow Trainer (``settings.trainer_username``) writing the JobSet a TrainJob
    controls: the one writer besides Kueue whose JobSet templates may carry gang node
    claims, pinned (``template.pinned``), or drop them all. It builds them from the
    TrainJob's runtime and runtime patches, where only Kueue can have put claims: the
    webhook refuses them in a runtime whoever asks, and in a TrainJob's patches on
    CREATE and on UPDATE by anyone but Kueue. The owner proves nothing (the writer sets
    ownerReferences); the requester is what tenants cannot forge."""
    return user == settings.trainer_username and controllers(jobset) == [TRAINJOB_OWNER]


def _templates(all_roles: tuple[Role, ...], out: Collector, *, may_pin: bool = False) -> None:
    for role in all_roles:
        start = len(out.violations)
        template.check_create(role.pod, out, may_pin=may_pin)
        _moved(out.violations, role, start)


def _spreads(
    jobset: Mapping[str, Any], gang: tuple[Role, ...], s: GangSettings, out: Collector
) -> str:
    """The one-pod-per-node warning over the gang roles ("" when each spreads)."""
    name = field_str(field_map(jobset, "metadata", "object"), "name", "metadata")
    packed = [r for r in gang if not _spread_role(name, r)]
    if not packed:
        return ""
    n = sum(r.pods for r in packed)
    warning = placement.WARNING.format(n=n).replace(
        "over the Job's pods", f"over the JobSet's pods ({JOBSET_NAME_LABEL}: {clip(name)})"
    )
    return packed_verdict(
        warning, f"{packed[0].field}.template.spec.template.spec.affinity", s, out
    )


def _spread_role(jobset_name: str, role: Role) -> bool:
    extra = {JOBSET_NAME_LABEL: jobset_name, ROLE_LABEL: role.name} if jobset_name else {}
    return placement.one_pod_per_node_with(role.job_spec, role.pod, extra)


def _collect(
    jobset: Mapping[str, Any],
    settings: GangSettings,
    namespace: str | None,
    *,
    may_pin: bool = False,
) -> tuple[Collector, tuple[str, dict[str, Any]] | None, tuple[Role, ...], str] | None:
    """None when not ours, else (violations, resolved fields or None, gang roles,
    warning)."""
    found = read_maps(jobset, trim=True)
    all_roles = roles(jobset)
    out = Collector()
    if not found.annotations and not found.labels:
        _templates(all_roles, out, may_pin=may_pin)
        return (out, None, (), "") if out.violations else None
    ann = dict(found.annotations)
    raw_roles = ann.pop(keys.GANG_ROLES, None)
    resolved = gang_rules(ann, found.labels, settings, out)
    gang = gang_roles(raw_roles, all_roles, out)
    check_pool_reserved(found, namespace, settings, out)
    check_queued(found, settings, out)
    check_elastic(found, out)
    _parity(gang, found.annotations.get(keys.COUNT, ""), out)
    _templates(all_roles, out, may_pin=may_pin)
    warning = _spreads(jobset, gang, settings, out)
    return out, resolved, gang, warning


def review_jobset(
    jobset: Mapping[str, Any],
    settings: GangSettings,
    *,
    namespace: str | None = None,
    user: str = "",
) -> Findings | None:
    """The CREATE verdict for a JobSet, as ``review_job`` gives one for a Job. A
    JobSet's templates may not claim gang nodes when it is created, save from the
    Trainer building an admitted TrainJob's JobSet, pinned (``by_trainer``)."""
    may_pin = by_trainer(jobset, user, settings)
    found = _collect(jobset, settings, namespace, may_pin=may_pin)
    if found is None:
        return None
    out, _resolved, _gang, warning = found
    return Findings(tuple(out.violations), out.omitted, (warning,) if warning else ())


class GangJobSet(NamedTuple):
    """A valid gang JobSet: its resolved spec and the replicatedJobs that are the gang."""

    spec: GangSpec
    roles: tuple[Role, ...]


def validate_jobset(jobset: Mapping[str, Any], settings: GangSettings) -> GangJobSet | None:
    """None for a JobSet with no gang keys; the gang; or GangValidationError with every
    violation (the rules of ``review_jobset``)."""
    found = _collect(jobset, settings, None)
    if found is None:
        return None
    out, resolved, gang, _warning = found
    if out.violations or resolved is None:
        raise GangValidationError(out.violations, out.omitted)
    return GangJobSet(GangSpec(pool=resolved[0], **resolved[1]), gang)


def review_jobset_update(
    old: Mapping[str, Any], new: Mapping[str, Any], settings: GangSettings, *, user: str
) -> Findings | None:
    """The UPDATE verdict: the gang keys are immutable, the queue label and count parity
    hold, and only Kueue changes the templates' gang node claims, or the Trainer
    resuming (pinned) or suspending (no claims) its TrainJob's JobSet (``by_trainer``)."""
    was, now = read_maps(old, trim=False), read_maps(new, trim=False)
    old_roles, new_roles = {r.name: r for r in roles(old)}, roles(new)
    out = Collector()
    trainer = by_trainer(new, user, settings)
    for role in new_roles:
        before = old_roles.get(role.name)
        start = len(out.violations)
        template.check_update(
            before.pod if before else {},
            role.pod,
            by_kueue=user == settings.kueue_username,
            may_pin=trainer,
            may_clear=trainer,
            out=out,
        )
        _moved(out.violations, role, start)
    if not (was.annotations or was.labels or now.annotations or now.labels):
        return Findings(tuple(out.violations), out.omitted) if out.violations else None
    check_immutable(was, now, out)
    if now.annotations or now.labels:
        check_queued(now, settings, out)
        check_elastic(now, out)
        ann = {k: v.strip() for k, v in now.annotations.items()}
        gang = gang_roles(ann.get(keys.GANG_ROLES), new_roles, Collector())
        _parity(gang, ann.get(keys.COUNT, ""), out)
    return Findings(tuple(out.violations), out.omitted)


def is_jobset(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == KIND and obj.get("apiVersion") == API_VERSION

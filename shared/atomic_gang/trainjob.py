"""TrainJob-level rules (Kubeflow Trainer v2, ``trainer.kubeflow.org/v1alpha1``): which of
its runtime's replicatedJobs are the gang, count parity with ``numNodes``, the runtime
patches' reach for gang nodes, and on UPDATE the same immutability as for a Job; and the
runtimes themselves (TrainingRuntime, ClusterTrainingRuntime), whose templates may not
reach for gang nodes at all.

The Trainer builds a JobSet from the runtime a TrainJob names, merged with the TrainJob's
``spec.runtimePatches``; Kueue admits the TrainJob as one Workload with one PodSet per
replicatedJob of that JobSet and writes our podSetUpdates as its own runtime patch. The
webhook reads no runtime (it makes no kube reads): ``gang-roles`` defaults to ``node``,
the trainer's replicatedJob in the runtimes Trainer ships, and names are checked for
syntax only; ``count`` is held to ``spec.trainer.numNodes`` when the TrainJob sets it.
The provisioner checks both again against the Workload's PodSets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from atomic_gang import keys, patterns, placement, template
from atomic_gang.devices import extended_requests
from atomic_gang.errors import Collector, GangValidationError, Violation, clip
from atomic_gang.job import (
    Findings,
    check_elastic,
    check_immutable,
    check_pool_reserved,
    check_queued,
    packed_verdict,
    read_maps,
)
from atomic_gang.jobset import JOBSET_NAME_LABEL, MAX_ROLES, ROLE_LABEL
from atomic_gang.objects import MalformedJobError, field_list, field_map, field_str, items
from atomic_gang.parse import gang_rules
from atomic_gang.settings import GangSettings
from atomic_gang.spec import GangSpec

API_VERSION = "trainer.kubeflow.org/v1alpha1"
KIND = "TrainJob"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
# The trainer's replicatedJob (the Trainer's constants.Node) in every runtime Trainer
# v2.2.1 ships; the torch runtime's only one.
TRAINER_ROLE = "node"
MAX_PATCHES = 16  # the CRD's maxItems for spec.runtimePatches
MAX_PATCH_ROLES = 100  # and for each patch's replicatedJobs
PATCHES = "spec.runtimePatches"
SPREAD_WARNING = (
    "atomic-gang: {pods} may share nodes, idling billed gang nodes, unless the "
    "runtime keeps them apart (the webhook cannot read it); request a GPU/Neuron/EFA "
    "resource in spec.trainer.resourcesPerNode, or add a required podAntiAffinity on "
    f"{placement.HOSTNAME} over {JOBSET_NAME_LABEL}: {{name}} in a runtime patch of each "
    "gang role"
)


class PatchedPod(NamedTuple):
    """One replicatedJob entry of one runtime patch: what it merges into a Job template."""

    manager: str
    role: str  # the replicatedJob it patches
    field: str  # its path in the TrainJob
    job_spec: Mapping[str, Any]  # its template.spec

    @property
    def identity(self) -> tuple[str, str]:
        return (self.manager, self.role)

    @property
    def pod(self) -> Mapping[str, Any]:
        return field_map(field_map(self.job_spec, "template", self.field), "spec", self.field)


def _bounded(raw: list[Any], limit: int, where: str) -> list[Mapping[str, Any]]:
    if len(raw) > limit:
        raise MalformedJobError(f"{where} has more than {limit} entries")
    return items(raw, where)


def _patches(trainjob: Mapping[str, Any]) -> list[tuple[int, str, Mapping[str, Any]]]:
    """(position, manager, trainingRuntimeSpec.template) of each runtime patch."""
    spec = field_map(trainjob, "spec", "object")
    out = []
    for i, patch in enumerate(
        _bounded(field_list(spec, "runtimePatches", "spec"), MAX_PATCHES, PATCHES)
    ):
        where = f"{PATCHES}[{i}]"
        manager = field_str(patch, "manager", where)
        runtime_spec = field_map(patch, "trainingRuntimeSpec", where)
        out.append(
            (i, manager, field_map(runtime_spec, "template", f"{where}.trainingRuntimeSpec"))
        )
    return out


def patched_pods(trainjob: Mapping[str, Any]) -> tuple[PatchedPod, ...]:
    """Every replicatedJob entry of every runtime patch: the one place a TrainJob holds
    pod scheduling fields (nodeSelector, affinity, tolerations) that reach its pods."""
    out = []
    for i, manager, tmpl in _patches(trainjob):
        where = f"{PATCHES}[{i}].trainingRuntimeSpec.template.spec"
        js_spec = field_map(tmpl, "spec", f"{PATCHES}[{i}].trainingRuntimeSpec.template")
        raw = _bounded(field_list(js_spec, "replicatedJobs", where), MAX_PATCH_ROLES, where)
        for j, rj in enumerate(raw):
            here = f"{where}.replicatedJobs[{j}]"
            job_spec = field_map(field_map(rj, "template", here), "spec", f"{here}.template")
            out.append(PatchedPod(manager, field_str(rj, "name", here), here, job_spec))
    return tuple(out)


def _moved(found: list[Violation], prefix: str, start: int) -> None:
    """Template violations name a Job template's path; point them at ``prefix``'s."""
    for i in range(start, len(found)):
        v = found[i]
        if v.field.startswith("spec.template"):
            found[i] = v._replace(field=f"{prefix}.template.{v.field}")


def _our_keys(meta: Mapping[str, Any], where: str) -> list[tuple[str, str, str]]:
    """(field, key, value) of each label or annotation under our prefix in ``meta``."""
    found: list[tuple[str, str, str]] = []
    for kind in ("labels", "annotations"):
        values = field_map(meta, kind, where)
        found.extend(
            (f"{where}.{kind}[{k}]", str(k), str(v))
            for k, v in values.items()
            if str(k).startswith(keys.PREFIX)
        )
    return found


def _misplaced(found: list[tuple[str, str, str]], out: Collector) -> None:
    for where, key, value in found:
        out.add(
            key,
            "WrongPlace",
            "is copied onto the JobSet the Trainer builds, which is no gang of its own",
            value,
            "put the gang's label and annotations on the TrainJob's own metadata",
            where,
        )


def _patch_keys(trainjob: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Our keys in the JobSet metadata of the runtime patches (the Trainer copies it)."""
    found = []
    for i, _manager, tmpl in _patches(trainjob):
        where = f"{PATCHES}[{i}].trainingRuntimeSpec.template.metadata"
        found.extend(_our_keys(field_map(tmpl, "metadata", where), where))
    return found


def num_nodes(trainjob: Mapping[str, Any]) -> int | None:
    """``spec.trainer.numNodes``; None when the TrainJob leaves it to its runtime."""
    trainer = field_map(field_map(trainjob, "spec", "object"), "trainer", "spec")
    value = trainer.get("numNodes")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedJobError("spec.trainer.numNodes must be an integer")
    return value


def gang_roles(raw: str | None, out: Collector) -> tuple[str, ...]:
    """The replicatedJobs ``gang-roles`` names (``node`` when unset). The runtime is not
    read here: a name is checked for its syntax, the provisioner checks it against the
    Workload's PodSets."""
    if raw is None:
        return (TRAINER_ROLE,)
    names = [n.strip() for n in raw.split(",") if n.strip()]
    bad = [
        n for n in names if len(n) > patterns.MAX_POOL_NAME or not patterns.RFC1123_LABEL.match(n)
    ]
    repeated = sorted({n for n in names if names.count(n) > 1}) if len(names) <= MAX_ROLES else []
    if names and not bad and not repeated and len(names) <= MAX_ROLES:
        return tuple(names)
    what = (
        "is empty"
        if not names
        else f"names more than {MAX_ROLES} replicatedJobs"
        if len(names) > MAX_ROLES
        else f"names no replicatedJob: {', '.join(repr(clip(n)) for n in bad[:3])}"
        if bad
        else f"repeats {', '.join(repeated)}"
    )
    out.add(
        keys.GANG_ROLES,
        "InvalidGangRoles",
        f"{what} (a TrainJob's gang roles are replicatedJobs of its runtime; default "
        f"{TRAINER_ROLE}, the trainer's)",
        raw,
        "a comma-separated list of replicatedJob names (RFC 1123 labels) whose pods each "
        f"get a gang node; leave it unset for the trainer nodes ({TRAINER_ROLE})",
    )
    return ()


def _parity(nodes: int | None, raw_count: str, out: Collector) -> None:
    """``count`` is the TrainJob's training nodes. Without numNodes the runtime's
    default applies, which only the provisioner sees (in the Workload's PodSets)."""
    if nodes is None or not patterns.COUNT.match(raw_count) or int(raw_count) == nodes:
        return
    out.add(
        keys.COUNT,
        "CountMismatch",
        f"must equal spec.trainer.numNodes ({nodes})",
        raw_count,
        f"the gang is the TrainJob's training nodes: set {keys.COUNT} to {nodes}, or "
        "numNodes to the count",
    )


def _claims(pods: tuple[PatchedPod, ...], out: Collector) -> None:
    for p in pods:
        start = len(out.violations)
        template.check_create(p.pod, out)
        _moved(out.violations, p.field, start)


def _spreads(
    trainjob: Mapping[str, Any],
    gang: tuple[str, ...],
    pods: tuple[PatchedPod, ...],
    *,
    raw_count: str,
    s: GangSettings,
    out: Collector,
) -> str:
    """The one-pod-per-node warning, read on what the TrainJob says ("" when its trainer
    nodes request a device, or a runtime patch of each gang role spreads them)."""
    trainer = field_map(field_map(trainjob, "spec", "object"), "trainer", "spec")
    resources = field_map(trainer, "resourcesPerNode", "spec.trainer")
    if not gang or extended_requests({"containers": [{"resources": resources}]}):
        return ""
    name = field_str(field_map(trainjob, "metadata", "object"), "name", "metadata")
    spread = {
        p.role
        for p in pods
        if placement.one_pod_per_node_with(
            p.job_spec, p.pod, {JOBSET_NAME_LABEL: name, ROLE_LABEL: p.role} if name else {}
        )
    }
    if all(role in spread for role in gang):
        return ""
    counted = f"the {raw_count} gang pods" if patterns.COUNT.match(raw_count) else "the gang pods"
    warning = SPREAD_WARNING.format(pods=counted, name=clip(name))
    return packed_verdict(warning, "spec.trainer.resourcesPerNode", s, out)


def _collect(
    trainjob: Mapping[str, Any], settings: GangSettings, namespace: str | None
) -> tuple[Collector, tuple[str, dict[str, Any]] | None, tuple[str, ...], str] | None:
    """None when not ours, else (violations, resolved fields or None, gang roles,
    warning)."""
    found = read_maps(trainjob, trim=True)
    pods = patched_pods(trainjob)
    out = Collector()
    if not found.annotations and not found.labels:
        _claims(pods, out)
        _misplaced(_patch_keys(trainjob), out)
        return (out, None, (), "") if out.violations else None
    ann = dict(found.annotations)
    raw_roles = ann.pop(keys.GANG_ROLES, None)
    resolved = gang_rules(ann, found.labels, settings, out)
    gang = gang_roles(raw_roles, out)
    check_pool_reserved(found, namespace, settings, out)
    check_queued(found, settings, out)
    check_elastic(found, out)
    _parity(num_nodes(trainjob), found.annotations.get(keys.COUNT, ""), out)
    _claims(pods, out)
    _misplaced(_patch_keys(trainjob), out)
    raw_count = found.annotations.get(keys.COUNT, "")
    warning = _spreads(trainjob, gang, pods, raw_count=raw_count, s=settings, out=out)
    return out, resolved, gang, warning


def review_trainjob(
    trainjob: Mapping[str, Any],
    settings: GangSettings,
    *,
    namespace: str | None = None,
    user: str = "",
) -> Findings | None:
    """The CREATE verdict for a TrainJob, as ``review_job`` gives one for a Job. Whoever
    ``user`` is, no runtime patch may claim gang nodes when it is created."""
    found = _collect(trainjob, settings, namespace)
    if found is None:
        return None
    out, _resolved, _gang, warning = found
    return Findings(tuple(out.violations), out.omitted, (warning,) if warning else ())


class GangTrainJob(NamedTuple):
    """A valid gang TrainJob: its resolved spec and the replicatedJobs that are the gang
    (as it names them: the Workload's PodSets say whether they exist)."""

    spec: GangSpec
    roles: tuple[str, ...]


def validate_trainjob(trainjob: Mapping[str, Any], settings: GangSettings) -> GangTrainJob | None:
    """None for a TrainJob with no gang keys; the gang; or GangValidationError with every
    violation (the rules of ``review_trainjob``)."""
    found = _collect(trainjob, settings, None)
    if found is None:
        return None
    out, resolved, gang, _warning = found
    if out.violations or resolved is None:
        raise GangValidationError(out.violations, out.omitted)
    return GangTrainJob(GangSpec(pool=resolved[0], **resolved[1]), gang)


def review_trainjob_update(
    old: Mapping[str, Any], new: Mapping[str, Any], settings: GangSettings, *, user: str
) -> Findings | None:
    """The UPDATE verdict: the gang keys are immutable, the queue label and count parity
    hold, and only Kueue (``settings.kueue_username``) changes the runtime patches' gang
    node claims: its admission writes our podSetUpdates as its patch, its stop takes
    them back. Claims are compared per patch manager and replicatedJob."""
    was, now = read_maps(old, trim=False), read_maps(new, trim=False)
    by_kueue = user == settings.kueue_username
    before = {p.identity: p for p in patched_pods(old)}
    after = {p.identity: p for p in patched_pods(new)}
    out = Collector()
    for identity, p in after.items():
        start = len(out.violations)
        prior = before.get(identity)
        template.check_update(prior.pod if prior else {}, p.pod, by_kueue=by_kueue, out=out)
        _moved(out.violations, p.field, start)
    for identity, p in before.items():
        if identity not in after:  # a patch entry removed with its claims
            start = len(out.violations)
            template.check_update(p.pod, {}, by_kueue=by_kueue, out=out)
            _moved(out.violations, p.field, start)
    known = {(key, value) for _where, key, value in _patch_keys(old)}
    _misplaced([k for k in _patch_keys(new) if (k[1], k[2]) not in known], out)
    if not (was.annotations or was.labels or now.annotations or now.labels):
        return Findings(tuple(out.violations), out.omitted) if out.violations else None
    check_immutable(was, now, out)
    if now.annotations or now.labels:
        check_queued(now, settings, out)
        check_elastic(now, out)
        _parity(num_nodes(new), now.annotations.get(keys.COUNT, "").strip(), out)
    return Findings(tuple(out.violations), out.omitted)


def review_runtime(
    runtime: Mapping[str, Any],
    settings: GangSettings,
    *,
    namespace: str | None = None,
    user: str = "",
) -> Findings | None:
    """The verdict on a TrainingRuntime or ClusterTrainingRuntime, on CREATE and UPDATE
    alike, whoever writes it (it takes what every kind's review takes, and needs none of
    it): None when its templates reach for no gang node and its
    JobSet metadata holds none of our keys, else each claim and key. The Trainer copies
    a runtime's templates into every JobSet it builds from it, so a claim there would
    reach every TrainJob's pods; only Kueue's admission of one TrainJob may."""
    spec = field_map(runtime, "spec", "object")
    tmpl = field_map(spec, "template", "spec")
    where = "spec.template.spec"
    js_spec = field_map(tmpl, "spec", "spec.template")
    out = Collector()
    for i, rj in enumerate(
        _bounded(field_list(js_spec, "replicatedJobs", where), MAX_PATCH_ROLES, where)
    ):
        here = f"{where}.replicatedJobs[{i}]"
        job_spec = field_map(field_map(rj, "template", here), "spec", f"{here}.template")
        pod = field_map(field_map(job_spec, "template", here), "spec", here)
        start = len(out.violations)
        template.check_create(pod, out)
        _moved(out.violations, here, start)
    _misplaced(
        _our_keys(field_map(tmpl, "metadata", "spec.template"), "spec.template.metadata"), out
    )
    return Findings(tuple(out.violations), out.omitted) if out.violations else None


def review_runtime_update(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    settings: GangSettings,
    *,
    user: str,
) -> Findings | None:
    """The UPDATE verdict on a runtime: the same as on CREATE, so an edit drops any
    claim a runtime from before the webhook still holds."""
    return review_runtime(new, settings, user=user)


def is_trainjob(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == KIND and obj.get("apiVersion") == API_VERSION

"""Job-level rules on top of the annotations: count parity, reserved selector
keys, and immutability of the gang contract on UPDATE.

Input is a raw batch/v1 Job as JSON-decoded dicts. A structurally broken
object raises :class:`MalformedJobError` (a bad request, not a bad Job).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from atomic_gang import keys, patterns
from atomic_gang.errors import GangValidationError, Violation
from atomic_gang.keys import PREFIX
from atomic_gang.parse import annotation_field, gang_rules, label_field, ours
from atomic_gang.rules import Collector
from atomic_gang.settings import GangSettings
from atomic_gang.spec import GangSpec


class MalformedJobError(ValueError):
    """The object is not shaped like a Kubernetes Job."""


def _map(obj: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if type(value) is not dict and not isinstance(value, Mapping):  # dict: fast path
        raise MalformedJobError(f"{where}.{key} must be an object")
    return value


def gang_map(meta: Mapping[str, Any], key: str, *, trim: bool) -> dict[str, str]:
    """The entries under our prefix of metadata.labels / metadata.annotations, values
    trimmed when ``trim``. Every entry is type-checked (strings to strings); only ours
    are kept, since no rule reads another key (a Job can carry kilobytes of them)."""
    value = _map(meta, key, "metadata")
    try:  # the type check at C speed: join raises TypeError on any non-string
        "".join(value)
        "".join(value.values())
    except TypeError:
        raise MalformedJobError(f"metadata.{key} must map strings to strings") from None
    if trim:
        return ours(value)
    return {k: v for k, v in value.items() if k.startswith(PREFIX)}


def gang_maps(job: Mapping[str, Any], *, trim: bool) -> tuple[dict[str, str], dict[str, str]]:
    """(annotations, labels) under our prefix; see gang_map."""
    if not isinstance(job, Mapping):
        raise MalformedJobError("the object must be a JSON object")
    meta = _map(job, "metadata", "object")
    return gang_map(meta, "annotations", trim=trim), gang_map(meta, "labels", trim=trim)


def _int_field(spec: Mapping[str, Any], name: str) -> int | None:
    value = spec.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedJobError(f"spec.{name} must be an integer")
    return value


def _parity(spec: Mapping[str, Any], count: int, out: Collector) -> None:
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


def _reserved_selectors(spec: Mapping[str, Any], out: Collector) -> None:
    pod = _map(_map(spec, "template", "spec"), "spec", "spec.template")
    selector = _map(pod, "nodeSelector", "spec.template.spec")
    for key in keys.SELECTOR_KEYS:
        if key in selector:
            out.add(
                key,
                "ReservedSelectorKey",
                "is set by the provisioner; the pod template must not select on it",
                str(selector[key]),
                "remove it from spec.template.spec.nodeSelector",
                f"spec.template.spec.nodeSelector[{key}]",
            )


def validate_job(job: Mapping[str, Any], settings: GangSettings) -> GangSpec | None:
    """None for a Job with no gang keys; a GangSpec; or GangValidationError with all."""
    resolved = _resolved(job, settings)
    return None if resolved is None else GangSpec(pool=resolved[0], **resolved[1])


def check_job(job: Mapping[str, Any], settings: GangSettings) -> bool:
    """False for a Job with no gang keys, True when valid, else GangValidationError
    with every violation. Same rules as validate_job."""
    return _resolved(job, settings) is not None


def job_violations(job: Mapping[str, Any], settings: GangSettings) -> list[Violation] | None:
    """The webhook's verdict without an exception: None for a Job with no gang keys,
    else every violation (empty when valid). MalformedJobError for a broken object."""
    found = _collect(job, settings)
    return None if found is None else found[1]


def _resolved(job: Mapping[str, Any], settings: GangSettings) -> tuple[str, dict[str, Any]] | None:
    found = _collect(job, settings)
    if found is None:
        return None
    resolved, violations = found
    if violations or resolved is None:
        raise GangValidationError(violations)
    return resolved


def _collect(
    job: Mapping[str, Any], settings: GangSettings
) -> tuple[tuple[str, dict[str, Any]] | None, list[Violation]] | None:
    """None for no gang keys, else (resolved fields or None, every violation)."""
    annotations, labels = gang_maps(job, trim=True)
    if not annotations and not labels:
        return None
    out = Collector()
    resolved = gang_rules(annotations, labels, settings, out)
    spec = _map(job, "spec", "object")
    raw_count = annotations.get(keys.COUNT, "")
    if resolved is not None:
        _parity(spec, int(resolved[1]["count"]), out)
    elif patterns.COUNT.match(raw_count):
        # Report parity even when other rules failed: every violation at once.
        _parity(spec, int(raw_count), out)
    _reserved_selectors(spec, out)
    return resolved, out.violations


def validate_job_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Violation]:
    """The gang annotations and the pool label are immutable once Kueue sized the Job."""
    old_ann, old_lab = gang_maps(old, trim=False)
    new_ann, new_lab = gang_maps(new, trim=False)
    out: list[Violation] = []
    for key in sorted({*old_ann, *new_ann}):
        if old_ann.get(key) != new_ann.get(key):
            out.append(_immutable(key, old_ann.get(key), new_ann.get(key), annotation_field(key)))
    for key in sorted({*old_lab, *new_lab}):
        if old_lab.get(key) != new_lab.get(key):
            out.append(_immutable(key, old_lab.get(key), new_lab.get(key), label_field(key)))
    return out


def _immutable(key: str, old: str | None, new: str | None, path: str) -> Violation:
    return Violation(
        key,
        "ImmutableGangField",
        f"cannot change after creation (was {old!r})",
        new,
        "Kueue has already sized the Workload; delete and recreate the Job instead",
        path,
    )

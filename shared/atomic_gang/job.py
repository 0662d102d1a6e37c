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
from atomic_gang.parse import annotation_field, check_gang, has_gang_keys, label_field
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


def string_map(obj: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    """metadata.labels / metadata.annotations as dict[str, str]."""
    value = _map(obj, key, where)
    for k, v in value.items():
        if type(k) is not str or type(v) is not str:
            raise MalformedJobError(f"{where}.{key} must map strings to strings")
    return dict(value)


def metadata_maps(job: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    if not isinstance(job, Mapping):
        raise MalformedJobError("the object must be a JSON object")
    meta = _map(job, "metadata", "object")
    return string_map(meta, "annotations", "metadata"), string_map(meta, "labels", "metadata")


def _int_field(spec: Mapping[str, Any], name: str) -> int | None:
    value = spec.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedJobError(f"spec.{name} must be an integer")
    return value


def _parity(job: Mapping[str, Any], count: int) -> list[Violation]:
    spec = _map(job, "spec", "object")
    parallelism = _int_field(spec, "parallelism")
    completions = _int_field(spec, "completions")
    out: list[Violation] = []
    effective = 1 if parallelism is None else parallelism
    if effective != count:
        out.append(
            Violation(
                keys.COUNT,
                "CountMismatch",
                f"must equal spec.parallelism ({effective})",
                str(count),
                "Kueue sizes the gang from parallelism; set both to N",
                annotation_field(keys.COUNT),
            )
        )
    if completions is not None and completions != count:
        out.append(
            Violation(
                keys.COUNT,
                "CountMismatch",
                f"must equal spec.completions ({completions})",
                str(count),
                "set completions to N as well, or leave it unset",
                annotation_field(keys.COUNT),
            )
        )
    return out


def _reserved_selectors(job: Mapping[str, Any]) -> list[Violation]:
    spec = _map(job, "spec", "object")
    pod = _map(_map(spec, "template", "spec"), "spec", "spec.template")
    selector = _map(pod, "nodeSelector", "spec.template.spec")
    return [
        Violation(
            key,
            "ReservedSelectorKey",
            "is set by the provisioner; the pod template must not select on it",
            str(selector[key]),
            "remove it from spec.template.spec.nodeSelector",
            f"spec.template.spec.nodeSelector[{key}]",
        )
        for key in keys.SELECTOR_KEYS
        if key in selector
    ]


def validate_job(job: Mapping[str, Any], settings: GangSettings) -> GangSpec | None:
    """None for a Job with no gang keys; a GangSpec; or GangValidationError with all."""
    resolved = _validate(job, settings)
    return None if resolved is None else GangSpec(pool=resolved[0], **resolved[1])


def check_job(job: Mapping[str, Any], settings: GangSettings) -> bool:
    """The webhook's verdict: False for a Job with no gang keys, True when valid, else
    GangValidationError with every violation. Same rules as validate_job."""
    return _validate(job, settings) is not None


def _validate(job: Mapping[str, Any], settings: GangSettings) -> tuple[str, dict[str, Any]] | None:
    annotations, labels = metadata_maps(job)
    if not has_gang_keys(annotations, labels):
        return None
    violations: list[Violation] = []
    resolved: tuple[str, dict[str, Any]] | None = None
    try:
        resolved = check_gang(annotations, labels, settings)
    except GangValidationError as err:
        violations.extend(err.violations)
    raw_count = annotations.get(keys.COUNT, "").strip()
    if resolved is not None:
        violations.extend(_parity(job, int(resolved[1]["count"])))
    elif patterns.COUNT.match(raw_count):
        # Report parity even when other rules failed: every violation at once.
        violations.extend(_parity(job, int(raw_count)))
    violations.extend(_reserved_selectors(job))
    if violations:
        raise GangValidationError(violations)
    return resolved


def validate_job_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Violation]:
    """The gang annotations and the pool label are immutable once Kueue sized the Job."""
    old_ann, old_lab = metadata_maps(old)
    new_ann, new_lab = metadata_maps(new)
    out: list[Violation] = []
    for key in sorted({k for k in (*old_ann, *new_ann) if k.startswith(keys.PREFIX)}):
        if old_ann.get(key) != new_ann.get(key):
            out.append(_immutable(key, old_ann.get(key), new_ann.get(key), annotation_field(key)))
    for key in sorted({k for k in (*old_lab, *new_lab) if k.startswith(keys.PREFIX)}):
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

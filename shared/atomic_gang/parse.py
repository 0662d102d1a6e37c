"""Parse a Job's gang annotations and pool label into a GangSpec.

:func:`parse_gang` returns a :class:`GangSpec` or raises
:class:`GangValidationError` with every violation; it never raises anything
else for any ``dict[str, str]`` input. Values are trimmed of surrounding
whitespace; keys are matched exactly, and an unknown key under our prefix is
an error with a "did you mean" hint.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from atomic_gang import keys, patterns
from atomic_gang.errors import Collector, GangValidationError
from atomic_gang.rules import check_scalars
from atomic_gang.settings import GangSettings
from atomic_gang.spec import GangSpec


def annotation_field(key: str) -> str:
    return f"metadata.annotations[{key}]"


def label_field(key: str) -> str:
    return f"metadata.labels[{key}]"


def ours(values: Mapping[str, str]) -> dict[str, str]:
    """The entries under our prefix, values trimmed: no rule reads any other key."""
    return {k: v.strip() for k, v in values.items() if k.startswith(keys.PREFIX)}


def _suggest(key: str, out: Collector) -> str:
    if out.full:  # the violation will only be counted: skip difflib
        return ""
    suffix = key[len(keys.PREFIX) :]
    names = [k[len(keys.PREFIX) :] for k in keys.USER_KEYS]
    close = difflib.get_close_matches(suffix, names, n=1, cutoff=0.6)
    if close:
        return f"did you mean {keys.PREFIX}{close[0]}?"
    return "known keys: " + ", ".join(names)


def _check_key_names(ann: Mapping[str, str], labels: Mapping[str, str], out: Collector) -> None:
    """``ann`` and ``labels`` hold only keys under our prefix (see gang_rules)."""
    for key, value in ann.items():
        if key not in keys.ANNOTATION_KEY_SET:
            _misplaced(out, key, value, kind="annotation", moved=key == keys.POOL)
    for key, value in labels.items():
        if key not in keys.LABEL_KEYS:
            _misplaced(out, key, value, kind="label", moved=key in keys.ANNOTATION_KEY_SET)


MISPLACED = {  # where a key of ours was found -> (the rule, where it belongs)
    "annotation": ("the pool key must be a label, not an annotation", "labels"),
    "label": ("this key must be an annotation, not a label", "annotations"),
}


def _misplaced(out: Collector, key: str, value: str, *, kind: str, moved: bool) -> None:
    """A key of ours in the wrong place (``moved``: move it), or one we do not know."""
    field = annotation_field(key) if kind == "annotation" else label_field(key)
    if moved:
        why, right = MISPLACED[kind]
        out.add(key, "WrongPlace", why, value, f"move it to metadata.{right}", field)
    else:
        text = f"unknown {kind} under {keys.PREFIX}"
        out.add(key, "UnknownKey", text, value, _suggest(key, out), field)


def _check_complete(ann: Mapping[str, str], labels: Mapping[str, str], out: Collector) -> None:
    if keys.POOL not in labels and not keys.ANNOTATION_KEY_SET.isdisjoint(ann):
        out.add(
            keys.POOL,
            "IncompleteSet",
            "gang annotations are set but the pool label is missing",
            None,
            f"add the label {keys.POOL}: <pool-name>",
            label_field(keys.POOL),
        )
    if keys.POOL in labels and keys.COUNT not in ann:
        out.add(
            keys.COUNT,
            "IncompleteSet",
            "the pool label is set but the count annotation is missing",
            None,
            f'add the annotation {keys.COUNT}: "<N>"',
            annotation_field(keys.COUNT),
        )
    elif keys.COUNT in ann and keys.INSTANCE_TYPE not in ann:
        out.add(
            keys.INSTANCE_TYPE,
            "MissingRequired",
            "the instance type is required",
            None,
            f"add the annotation {keys.INSTANCE_TYPE}, e.g. p4d.24xlarge",
            annotation_field(keys.INSTANCE_TYPE),
        )


def _check_pool(labels: Mapping[str, str], out: Collector) -> str:
    pool = labels.get(keys.POOL)
    if pool is None:
        return ""
    if len(pool) > patterns.MAX_POOL_NAME or not patterns.RFC1123_LABEL.match(pool):
        out.add(
            keys.POOL,
            "InvalidPoolName",
            "must be an RFC 1123 label of at most 63 characters",
            pool,
            "lower-case letters, digits and '-', starting and ending alphanumeric",
            label_field(keys.POOL),
        )
    return pool


def parse_gang(
    annotations: Mapping[str, str], labels: Mapping[str, str], settings: GangSettings
) -> GangSpec:
    """Validate and resolve; raise GangValidationError listing every violation."""
    pool, resolved = check_gang(annotations, labels, settings)
    return GangSpec(pool=pool, **resolved)


def check_gang(
    annotations: Mapping[str, str], labels: Mapping[str, str], settings: GangSettings
) -> tuple[str, dict[str, Any]]:
    """Every rule, without building the GangSpec (the webhook's hot path needs only the
    verdict): (pool, resolved GangSpec fields) or GangValidationError."""
    out = Collector()
    resolved = gang_rules(ours(annotations), ours(labels), settings, out)
    if resolved is None:
        raise GangValidationError(out.violations, out.omitted)
    return resolved


def gang_rules(
    ann: Mapping[str, str], lab: Mapping[str, str], settings: GangSettings, out: Collector
) -> tuple[str, dict[str, Any]] | None:
    """Every rule, each broken one added to ``out`` (nothing is raised): the pool and
    the resolved GangSpec fields, or None when any rule failed. ``ann`` and ``lab``
    come from :func:`ours`: only our prefix's keys, values trimmed."""
    before = out.total
    if not ann and not lab:
        out.add(
            keys.POOL,
            "NotAGang",
            "the Job carries no atomic-gang annotations or pool label",
            None,
            f"set the {keys.POOL} label and the {keys.COUNT} and "
            f"{keys.INSTANCE_TYPE} annotations, or route the Job to another queue",
            label_field(keys.POOL),
        )
        return None
    if len(ann) + len(lab) > keys.MAX_GANG_KEYS:
        out.add(
            keys.PREFIX,
            "TooManyKeys",
            f"more than {keys.MAX_GANG_KEYS} keys under {keys.PREFIX}; a gang Job uses at "
            f"most {len(keys.USER_KEYS)}",
            None,
            "remove the keys this project does not define",
            "metadata",
        )
        return None
    _check_key_names(ann, lab, out)
    _check_complete(ann, lab, out)
    pool = _check_pool(lab, out)
    resolved = check_scalars(ann, settings, out)
    if resolved is None and out.total == before:  # pragma: no cover - defensive
        out.add(keys.COUNT, "IncompleteSet", "the gang annotations are incomplete", None)
    if resolved is None or out.total != before:
        return None
    return pool, resolved

"""Typed reads of raw Kubernetes JSON (a batch/v1 Job and its pod template).

The webhook sees objects before anyone typed them, and a hostile client can post
any shape straight to the Service, so every read checks the type it expects and
raises :class:`MalformedJobError` (a bad request, not a bad Job) when it differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class MalformedJobError(ValueError):
    """The object is not shaped like a Kubernetes Job."""


def field_map(obj: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """``obj[key]`` as a mapping; {} when absent or null."""
    value = obj.get(key)
    if value is None:
        return {}
    if type(value) is not dict and not isinstance(value, Mapping):  # dict: fast path
        raise MalformedJobError(f"{where}.{key} must be an object")
    return value


def field_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """``obj[key]`` as a list; [] when absent or null."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedJobError(f"{where}.{key} must be a list")
    return value


def field_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    """``obj[key]`` as a string; "" when absent or null."""
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedJobError(f"{where}.{key} must be a string")
    return value


def items(value: list[Any], where: str) -> list[Mapping[str, Any]]:
    """The entries of a list of objects, each checked to be a mapping."""
    if not all(isinstance(item, Mapping) for item in value):
        raise MalformedJobError(f"{where} must be a list of objects")
    return value


def pod_spec(job_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec.template.spec`` of a Job."""
    return field_map(field_map(job_spec, "template", "spec"), "spec", "spec.template")


def template_labels(job_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = field_map(field_map(job_spec, "template", "spec"), "metadata", "spec.template")
    return field_map(meta, "labels", "spec.template.metadata")

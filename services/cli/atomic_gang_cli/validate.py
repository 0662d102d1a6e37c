"""``atomic-gang validate``: check every gang object in multi-document YAML files.

Prints one line per violation, ``<file>:<kind>/<name>: <key>: <message>``, and the
webhook's warnings on stderr. Jobs, JobSets, TrainJobs, CronJobs (their ``jobTemplate``),
Kubeflow Trainer runtimes (their templates may claim no gang node) and ``kind: List``
items are checked; other kinds are skipped. Exit 0 = all valid, 1 = some invalid,
2 = unreadable.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from atomic_gang import GangSettings
from atomic_gang.gang_object import review
from atomic_gang.jobset import API_VERSION as JOBSET_API
from atomic_gang.jobset import KIND as JOBSET_KIND
from atomic_gang.objects import MalformedJobError
from atomic_gang.trainjob import API_VERSION as TRAINER_API
from atomic_gang.trainjob import KIND as TRAINJOB_KIND
from atomic_gang.trainjob import RUNTIME_KINDS


class UnreadableError(Exception):
    """A file that cannot be read or parsed as YAML."""


@dataclass(frozen=True)
class Finding:
    where: str
    key: str
    message: str

    def line(self) -> str:
        return f"{self.where}: {self.key}: {self.message}"


def _documents(path: str) -> list[Any]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UnreadableError(f"{path}: cannot read: {exc}".replace("\n", " ")) from exc


def _jobs(doc: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(kind/name, object) for every object inside ``doc`` we judge."""
    if not isinstance(doc, Mapping):
        return
    kind = doc.get("kind")
    raw_meta = doc.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    name = str(meta.get("name") or meta.get("generateName") or "<unnamed>")
    if kind == "Job" and str(doc.get("apiVersion", "batch/v1")) == "batch/v1":
        yield f"Job/{name}", doc
    elif kind == JOBSET_KIND and doc.get("apiVersion") == JOBSET_API:
        yield f"JobSet/{name}", doc
    elif kind in (TRAINJOB_KIND, *RUNTIME_KINDS) and doc.get("apiVersion") == TRAINER_API:
        yield f"{kind}/{name}", doc
    elif kind == "CronJob":
        spec = doc.get("spec")
        template = spec.get("jobTemplate") if isinstance(spec, Mapping) else None
        if isinstance(template, Mapping):
            yield f"CronJob/{name}", template
    elif kind == "List" and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _jobs(item)


def check_file(path: str, settings: GangSettings) -> tuple[list[Finding], list[Finding]]:
    """(violations, warnings) of every object in the file we judge."""
    findings: list[Finding] = []
    warnings: list[Finding] = []
    for doc in _documents(path):
        for ref, job in _jobs(doc):
            where = f"{path}:{ref}"
            # The allowlists of the Job's namespace, as the webhook applies them (a Job
            # without one is judged as kubectl would create it: in "default").
            meta = job.get("metadata")
            namespace = str((meta if isinstance(meta, dict) else {}).get("namespace") or "default")
            try:
                found = review(job, settings.for_namespace(namespace), namespace=namespace)
            except MalformedJobError as err:
                findings.append(Finding(where, "(object)", f"{err} [MalformedJob]"))
                continue
            if found is None:
                continue
            findings.extend(
                Finding(where, v.key, v.render().removeprefix(f"{v.key}: "))
                for v in found.violations
            )
            if found.omitted:
                findings.append(Finding(where, "(object)", f"and {found.omitted} more"))
            warnings.extend(Finding(where, "warning", w) for w in found.warnings)
    return findings, warnings


def run(paths: list[str], settings: GangSettings, out: TextIO, err: TextIO) -> int:
    status = 0
    for path in paths:
        try:
            findings, warnings = check_file(path, settings)
        except UnreadableError as exc:
            err.write(f"{exc}\n")
            status = 2
            continue
        for warning in warnings:
            err.write(warning.line() + "\n")
        for finding in findings:
            out.write(finding.line() + "\n")
        if findings and status == 0:
            status = 1
    return status

"""Render the chart with the pinned helm: values in, objects (or the error) out.

Shared by the fast render tests and the e2e chart tests. Renders run helm
as a subprocess (no cluster: ``helm template``); many renders are batched
through a thread pool so the fast tier pays for the slowest one, not the sum.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from atomic_gang_devstack.bins import REPO_ROOT, Bins

CHART = REPO_ROOT / "charts" / "atomic-gang-provisioner"
KUBE_VERSION = "1.36.3"
RELEASE = "agp"
NAMESPACE = "atomic-gang-system"
Obj = dict[str, Any]

# The least a user must set (the install command of docs/operations.md).
REQUIRED: Obj = {
    "clusterName": "my-eks-cluster",
    "defaults": {
        "region": "us-east-1",
        "nodeRoleArn": "arn:aws:iam::123456789012:role/eks-gang-node-role",
    },
    "kueue": {"clusterQueue": {"nominalQuota": {"cpu": "256", "memory": "1Ti"}}},
}


def helm_path() -> Path:
    """The pinned helm, built by hack/build-bins.sh when missing (never skipped)."""
    bins = Bins.load()
    bins.ensure(("helm",))
    return bins.path("helm")


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> Obj:
    """Deep merge of value trees (``over`` wins; lists are replaced; None deletes)."""
    out: Obj = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class Rendered:
    """One render: its objects, or helm's exit code and error text."""

    returncode: int
    objects: tuple[Obj, ...]
    stderr: str

    def of(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o.get("kind") == kind]

    def one(self, kind: str, name_suffix: str = "") -> Obj:
        found = [o for o in self.of(kind) if o["metadata"]["name"].endswith(name_suffix)]
        assert len(found) == 1, f"{kind} *{name_suffix}: {[o['metadata']['name'] for o in found]}"
        return found[0]

    @property
    def kinds(self) -> list[str]:
        return sorted(str(o["kind"]) for o in self.objects)


def template_argv(
    helm: Path, *, release: str = RELEASE, namespace: str = NAMESPACE, crds: bool = False
) -> list[str]:
    argv = [str(helm), "template", release, str(CHART), "--namespace", namespace]
    argv += ["--kube-version", KUBE_VERSION, "--values", "-"]
    return [*argv, "--include-crds"] if crds else argv


def render(
    helm: Path,
    values: Mapping[str, Any],
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    crds: bool = False,
) -> Rendered:
    """``helm template`` with ``values`` (JSON is YAML) on stdin."""
    done = subprocess.run(
        template_argv(helm, release=release, namespace=namespace, crds=crds),
        input=json.dumps(values),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    objects = tuple(d for d in yaml.safe_load_all(done.stdout) if d) if done.returncode == 0 else ()
    return Rendered(done.returncode, objects, done.stderr)


def render_many(helm: Path, cases: Mapping[str, Mapping[str, Any]]) -> dict[str, Rendered]:
    """Render every case concurrently; keys are the case names."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {name: pool.submit(render, helm, values) for name, values in cases.items()}
        return {name: f.result() for name, f in futures.items()}


def manifest(objects: Iterable[Obj]) -> str:
    """A YAML stream of ``objects`` (kubectl input)."""
    return "".join("---\n" + yaml.safe_dump(o, sort_keys=False) for o in objects)

"""Render the GangNodePool CustomResourceDefinition from the pydantic models.

pydantic's JSON Schema is turned into a Kubernetes *structural* schema: ``$ref``
inlined, ``Optional`` as ``nullable``, titles and defaults dropped, the
conditions list keyed by ``type``. ``python -m atomic_gang_provisioner.api.crd``
prints it; ``make crd`` writes it into the chart, and a test fails on drift.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from atomic_gang_provisioner.api.conditions import MEANING
from atomic_gang_provisioner.api.gang_node_pool import (
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    GangNodePoolSpec,
    GangNodePoolStatus,
)

_DROP = frozenset({"title", "default"})
_DESCRIPTION = (
    "Controller-owned record of one gang pool's EC2 node set. "
    "Do not edit: drive pools through Job annotations."
)


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_structural(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _structural(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    options = node.get("anyOf")
    if options is not None:
        non_null = [o for o in options if o.get("type") != "null"]
        if len(non_null) == 1 and len(non_null) < len(options):
            inner = dict(_structural(non_null[0], defs))
            inner["nullable"] = True
            # The apiserver checks a null against an enum too and refuses it (even with
            # null listed): the values are left to the description and our own models.
            inner.pop("enum", None)
            if "description" in node:
                inner["description"] = node["description"]
            return inner
    out = {k: _structural(v, defs) for k, v in node.items() if k not in _DROP}
    if out.get("additionalProperties") is False:  # extra="forbid"; the apiserver prunes
        del out["additionalProperties"]
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "additionalProperties" not in out
    ):
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _schema(model: type[Any]) -> dict[str, Any]:
    raw = model.model_json_schema(mode="serialization")
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = _structural(raw, defs)
    return schema


def _spec_schema() -> dict[str, Any]:
    schema = _schema(GangNodePoolSpec)
    schema["properties"]["claim"]["properties"]["claimedAt"]["format"] = "date-time"
    return schema


def _status_schema() -> dict[str, Any]:
    schema = _schema(GangNodePoolStatus)
    conditions = schema["properties"]["conditions"]
    meanings = " ".join(f"{kind}: {meaning}." for kind, meaning in MEANING.items())
    conditions["description"] += f" True means: {meanings}"
    conditions["x-kubernetes-list-type"] = "map"
    conditions["x-kubernetes-list-map-keys"] = ["type"]
    for name in (
        "lastTransitionTime",
        "acquiringSince",
        "launchedAt",
        "joinDeadline",
        "satisfiedAt",
        "keepWarmUntil",
        "nextAttemptAt",
        "unhealthySince",
        "reservationEnd",
        "waitingSince",
    ):
        target = (
            conditions["items"]["properties"]
            if name == "lastTransitionTime"
            else schema["properties"]
        )
        target[name]["format"] = "date-time"
    return schema


def _columns() -> list[dict[str, Any]]:
    def col(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
        c: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
        if priority:
            c["priority"] = priority
        return c

    return [
        col("Phase", ".status.phase"),
        col("Ready", ".status.readyCount", "integer"),
        col("Count", ".spec.shape.count", "integer"),
        col("Repairs", ".status.repairs", "integer"),
        col("Type", ".spec.shape.instanceType"),
        col("Mode", ".spec.shape.mode"),
        col("Age", ".metadata.creationTimestamp", "date"),
        col("Claim", ".spec.claim.name", priority=1),
        col("Owner", ".spec.claim.owner", priority=1),
        col("Group", ".status.activeGroup", priority=1),
        col("Shortfalls", ".status.consecutiveShortfalls", "integer", priority=1),
        col("Error", ".status.lastErrorReason", priority=1),
        col("Spread", ".status.spread", "integer", priority=1),
        col("Reservation", ".status.reservationId", priority=1),
        col("Ends", ".status.reservationEnd", priority=1),
    ]


def _version() -> dict[str, Any]:
    return {
        "name": VERSION,
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "additionalPrinterColumns": _columns(),
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "description": _DESCRIPTION,
                "required": ["spec"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "spec": _spec_schema(),
                    "status": _status_schema(),
                },
            }
        },
    }


def crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PLURAL}.{GROUP}",
            # crds/ is not templated by helm: static labels, so that selectors on the
            # chart's standard labels still find the CRD.
            "labels": {
                "app.kubernetes.io/name": "atomic-gang-provisioner",
                "app.kubernetes.io/part-of": "atomic-gang-provisioner",
                "app.kubernetes.io/component": "crd",
            },
        },
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": KIND.lower(),
                "shortNames": ["gnp"],
                "categories": ["atomic-gang"],
            },
            "versions": [_version()],
        },
    }


def render() -> str:
    header = (
        "# Generated by `make crd` from atomic_gang_provisioner.api.gang_node_pool. Do not edit.\n"
    )
    return header + yaml.safe_dump(crd(), sort_keys=False, width=100)


if __name__ == "__main__":
    sys.stdout.write(render())

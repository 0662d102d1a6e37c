"""The checked-in CRD is exactly what the pydantic models generate."""

from __future__ import annotations

from pathlib import Path

import yaml

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.api.crd import crd, render
from tests.support.pools import launched

CHART_CRD = (
    Path(__file__).resolve().parents[3]
    / "charts/atomic-gang-provisioner/crds"
    / "gangnodepools.atomic-gang.k8s.aws.yaml"
)


def test_checked_in_crd_matches_the_models() -> None:
    assert CHART_CRD.read_text() == render(), "CRD drifted: run `make crd` and commit"


def test_identity_columns_and_subresources() -> None:
    doc = crd()
    spec = doc["spec"]
    assert doc["metadata"]["name"] == "gangnodepools.atomic-gang.k8s.aws"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["shortNames"] == ["gnp"]
    version = spec["versions"][0]
    assert version["name"] == "v1alpha1"
    assert version["subresources"] == {"status": {}}
    default_cols = [c["name"] for c in version["additionalPrinterColumns"] if "priority" not in c]
    assert default_cols == ["Phase", "Ready", "Count", "Repairs", "Type", "Mode", "Age"]


def _walk(node: object) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            out.extend(_walk(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_walk(v))
    return out


def test_schema_is_structural() -> None:
    schema = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for node in _walk(schema):
        assert "$ref" not in node
        assert "anyOf" not in node
        assert node.get("additionalProperties") is not False
        if "properties" in node:
            assert node.get("type") == "object"


def test_a_pool_round_trips_through_yaml() -> None:
    pool = launched()
    again = GangNodePool.from_dict(yaml.safe_load(yaml.safe_dump(pool.to_dict())))
    assert again == pool


def test_the_crd_carries_the_chart_standard_labels() -> None:
    labels = crd()["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "atomic-gang-provisioner"
    assert labels["app.kubernetes.io/part-of"] == "atomic-gang-provisioner"

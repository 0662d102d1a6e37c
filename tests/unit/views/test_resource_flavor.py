"""The ResourceFlavor view: the nodeLabels and tolerations Kueue gives a PodSet."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.views.resource_flavor import ResourceFlavor


def test_reads_labels_and_tolerations() -> None:
    toleration = {"key": keys.GANG_TAINT, "operator": "Exists"}
    flavor = ResourceFlavor(
        {
            "metadata": {"name": "gpu"},
            "spec": {"nodeLabels": {keys.MANAGED: "true"}, "tolerations": [toleration]},
        }
    )
    assert flavor.name == "gpu"
    assert flavor.node_labels == {keys.MANAGED: "true"}
    assert flavor.tolerations == [toleration]


@pytest.mark.parametrize(
    "raw",
    [{}, {"spec": None}, {"spec": {"nodeLabels": None, "tolerations": None}}],
    ids=["bare", "null-spec", "null-fields"],
)
def test_a_flavor_with_no_spec_selects_and_tolerates_nothing(raw: dict[str, Any]) -> None:
    flavor = ResourceFlavor(raw)
    assert flavor.node_labels == {}
    assert list(flavor.tolerations) == []

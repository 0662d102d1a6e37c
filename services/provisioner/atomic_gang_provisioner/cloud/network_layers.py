"""Instance topology, the pure part: which types EC2 reports it for, and the node labels.

DescribeInstanceTopology lists network nodes top-down (layer 1 first; the last is
the node right above the instance), for the families below only. The labels are
the keys cloud-provider-aws sets, so a node labelled by either reads the same.
"""

from __future__ import annotations

from typing import Final

SUPPORTED_FAMILIES: Final = frozenset(
    {
        "p3dn",
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "p5en",
        "p6-b200",
        "trn1",
        "trn1n",
        "trn2",
        "trn2u",
        "hpc6a",
        "hpc6id",
        "hpc7a",
        "hpc7g",
        "g6e",
        "g7e",
    }
)
LAYER_LABEL: Final = "topology.k8s.aws/network-node-layer-{n}"
MAX_LAYERS: Final = 8  # p6-b200 has 4; RBAC and the label patch are bounded by this


def supported(instance_type: str) -> bool:
    """Whether EC2 reports topology for this type (others skip all of it, quietly)."""
    return instance_type.split(".", 1)[0] in SUPPORTED_FAMILIES


def layer_labels(nodes: tuple[str, ...]) -> dict[str, str]:
    """``topology.k8s.aws/network-node-layer-<n>`` for n from 1, top-down."""
    return {LAYER_LABEL.format(n=n): node for n, node in enumerate(nodes[:MAX_LAYERS], 1)}

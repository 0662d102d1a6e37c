"""The GangNodePool a namespace's ``pool`` label names, as the e2e tests expect it.

Restated here rather than imported from ``atomic_gang.pool_access``, so that a test
catches the product naming a pool wrongly. A label the settings list in
``poolNamespaces`` keeps its bare name; the tests look up no pool of such a label.
"""

from __future__ import annotations

MAX_NAME = 63  # a label value: the gang's Nodes and EC2 tags carry the pool's name


def gnp(namespace: str, label: str) -> str:
    """``<namespace>.<label>``: the pool that ``label`` names for a Job in ``namespace``."""
    name = f"{namespace}.{label}"
    # Longer names are hashed by the product; the tests keep theirs short instead.
    assert len(name) <= MAX_NAME, f"{name!r} is {len(name)} characters: use a shorter label"
    return name

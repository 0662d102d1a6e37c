"""A resync is spread over its period: objects fall into slices by a hash of their key."""

from __future__ import annotations

from collections import Counter

from atomic_gang_provisioner.kube.informer import RESYNC_SLICES, resync_slice


def test_objects_spread_over_every_slice_and_each_keeps_its_own() -> None:
    objs = [{"metadata": {"namespace": "ns", "name": f"pool-{i:03d}"}} for i in range(500)]
    per_slice = Counter(resync_slice(o) for o in objs)
    assert set(per_slice) == set(range(RESYNC_SLICES))
    assert max(per_slice.values()) < 500 / RESYNC_SLICES * 1.5  # none takes a big share
    assert resync_slice(objs[7]) == resync_slice(dict(objs[7]))

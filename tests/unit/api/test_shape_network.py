"""The network fields are part of the pool's shape: written, read back, compared."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import GangSpec, validate_job
from atomic_gang import keys as k
from atomic_gang_provisioner.api import GangNodePool, PoolShape
from tests.support.jobs import gang_job, settings
from tests.support.pools import pool

NETWORK = {k.PLACEMENT: "cluster", k.EFA: "true", k.MAX_SPREAD: "1"}


def spec(**annotations: str | None) -> GangSpec:
    found = validate_job(
        gang_job(annotations=annotations), settings(allowedPlacementGroups=["team-*"])
    )
    assert found is not None
    return found


@pytest.mark.parametrize(
    "annotations",
    [
        pytest.param(NETWORK, id="placement-efa-max-spread"),
        pytest.param({k.PLACEMENT_GROUP_NAME: "team-pg", k.EFA: "2"}, id="named-group-efa-2"),
        pytest.param({}, id="none"),
    ],
)
def test_shape_round_trips_through_the_stored_pool(annotations: dict[str, str]) -> None:
    want = spec(**annotations)
    stored = pool().model_copy(
        update={"spec": pool().spec.model_copy(update={"shape": PoolShape.of(want)})}
    )
    read = GangNodePool.from_dict(stored.to_dict())
    got = read.spec.shape.gang_spec(pool=want.pool, keep_warm_ttl=str(want.keep_warm_ttl))
    assert got.shape_equals(want)
    assert (got.placement, got.placement_group_name, got.efa, got.max_spread) == (
        want.placement,
        want.placement_group_name,
        want.efa,
        want.max_spread,
    )


@pytest.mark.parametrize("change", [{k.EFA: None}, {k.MAX_SPREAD: "2"}, {k.PLACEMENT: None}])
def test_a_claimant_with_other_network_fields_cannot_reuse_the_pool(
    change: dict[str, Any],
) -> None:
    first, other = spec(**NETWORK), spec(**{**NETWORK, **change})
    assert not first.shape_equals(other)
    assert first.shape_diff(other) == [
        {k.EFA: "efa", k.MAX_SPREAD: "maxSpread", k.PLACEMENT: "placement"}[next(iter(change))]
    ]


def test_a_pool_written_before_the_network_fields_reads_as_none() -> None:
    obj = pool().to_dict()
    for name in ("placement", "placementGroupName", "efa", "maxSpread"):
        assert name not in obj["spec"]["shape"]
    shape = GangNodePool.from_dict(obj).spec.shape
    assert (shape.placement, shape.efa, shape.maxSpread) == (None, None, None)
    assert GangNodePool.from_dict(obj).status.networkNodes is None


def test_the_stored_shape_holds_every_field_of_the_gang_shape_and_nothing_else() -> None:
    """PoolShape is GangSpec's stored form (docs/design.md#the-stored-shape-and-the-gang-spec):
    a field added to the one and not the other fails here, not in a claimant's reuse."""
    shape_fields = set(spec().shape()) | {"capacityReservationId"}  # used per launch
    assert set(PoolShape.model_fields) == shape_fields


def test_a_shape_with_every_field_set_round_trips_to_an_equal_spec() -> None:
    want = spec(
        **NETWORK,
        **{k.AMI_ID: "ami-0123456789abcdef0", k.CAPACITY_RESERVATION_ID: "cr-0123456789abcdef0"},
    )
    got = PoolShape.of(want).gang_spec(pool=want.pool, keep_warm_ttl=str(want.keep_warm_ttl))
    assert got == want

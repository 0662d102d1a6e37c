"""The cached GangNodePool read without parsing: phase, instances, topology, claim and
shape, on a pool written to and on one just created (no status yet)."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_provisioner.views.pool_object import PoolObject


def test_reads_a_written_pool() -> None:
    pool = PoolObject(
        {
            "metadata": {"name": "p"},
            "spec": {
                "claim": {"namespace": "team", "name": "wl", "uid": "u"},
                "shape": {
                    "instanceType": "p5.48xlarge",
                    "count": 8,
                    "capacityReservationId": " cr-1, ,cr-2 ",
                },
            },
            "status": {"phase": "Joining", "instanceIds": ["i-1", "i-2"], "networkNodes": {}},
        }
    )
    assert pool.name == "p"
    assert pool.phase == "Joining"
    assert pool.instance_ids == ["i-1", "i-2"]
    assert pool.topology_read  # written, even if empty
    assert pool.claim == {"namespace": "team", "name": "wl", "uid": "u"}
    assert pool.instance_type == "p5.48xlarge"
    assert pool.count == 8
    assert pool.reservation_ids == ("cr-1", "cr-2")


@pytest.mark.parametrize(
    "raw",
    [
        {"metadata": {"name": "p"}},
        {"metadata": {"name": "p"}, "spec": None, "status": None},
        {
            "metadata": {"name": "p"},
            "spec": {"claim": None, "shape": None},
            "status": {"phase": None, "instanceIds": None, "networkNodes": None},
        },
    ],
    ids=["no-sections", "null-sections", "null-fields"],
)
def test_a_new_pool_reads_idle_free_and_empty(raw: dict[str, Any]) -> None:
    pool = PoolObject(raw)
    assert pool.phase == "Idle"
    assert pool.instance_ids == []
    assert not pool.topology_read
    assert pool.claim is None
    assert pool.shape == {}
    assert pool.instance_type == ""
    assert pool.count == 1
    assert pool.reservation_ids == ()


@pytest.mark.parametrize(
    ("status", "waits"),
    [
        pytest.param({"phase": "Acquiring", "lastErrorReason": "WaitingForLaunchBudget"}, True),
        pytest.param({"phase": "Acquiring", "lastErrorReason": "InsufficientCapacity"}, False),
        pytest.param({"phase": "Joining", "lastErrorReason": "WaitingForLaunchBudget"}, False),
        pytest.param({"phase": "Acquiring", "lastErrorReason": "ANewerReleasesReason"}, False),
        pytest.param({}, False),
    ],
)
def test_waits_for_launch_budget_only_while_acquiring_for_that_reason(
    status: dict[str, Any], waits: bool
) -> None:
    assert PoolObject({"status": status}).waits_for_launch_budget is waits

"""The validation every launch answer must pass: exactly N distinct, live ids."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from atomic_gang_provisioner.cloud.aws.launch import exactly_n
from atomic_gang_provisioner.cloud.values import Instance


def inst(iid: str, state: str = "pending") -> Instance:
    return Instance(
        instance_id=iid,
        state=state,
        availability_zone="us-east-1a",
        instance_type="p4d.24xlarge",
        launch_time=datetime(2026, 1, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("instances", "n", "ok"),
    [
        pytest.param([inst("i-1"), inst("i-2"), inst("i-3")], 3, True, id="n-distinct-live"),
        pytest.param([inst("i-1", "running"), inst("i-2")], 2, True, id="running-or-pending"),
        pytest.param([inst("i-1"), inst("i-1"), inst("i-2")], 3, False, id="duplicate-id"),
        pytest.param([inst("i-1"), inst("i-1")], 2, False, id="one-id-twice"),
        pytest.param([inst("i-1"), inst("i-2")], 3, False, id="fewer"),
        pytest.param([inst("i-1"), inst("i-2"), inst("i-3")], 2, False, id="more"),
        pytest.param([inst("i-1"), inst("i-2", "terminated")], 2, False, id="one-terminated"),
        pytest.param([inst("i-1"), inst("i-2", "shutting-down")], 2, False, id="one-shutting"),
        pytest.param([], 1, False, id="empty"),
    ],
)
def test_exactly_n(instances: list[Instance], n: int, ok: bool) -> None:
    assert exactly_n(instances, n) is ok

"""``check_states``: a Workload's raw admissionChecks, read without its whole view."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_provisioner.workload.view import check_states


def test_reads_the_states_as_they_are() -> None:
    states = [{"name": "gang", "state": "Pending"}, {"name": "other", "state": "Ready"}]
    assert check_states({"status": {"admissionChecks": states}}) is states


@pytest.mark.parametrize(
    "raw",
    [{}, {"status": None}, {"status": {}}, {"status": {"admissionChecks": None}}],
    ids=["bare", "null-status", "empty-status", "null-checks"],
)
def test_no_states(raw: dict[str, Any]) -> None:
    assert tuple(check_states(raw)) == ()

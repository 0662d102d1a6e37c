"""FailureReason: what each reason a pool records in lastErrorReason means, in one table."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_type_hints

import pytest

import atomic_gang_provisioner
from atomic_gang_provisioner.api import GangNodePool, GangNodePoolStatus, StatusChange
from atomic_gang_provisioner.api.reasons import (
    TRAITS,
    FailureReason,
    Traits,
    UnknownReason,
    read_reason,
)
from tests.support.pools import pool

R = FailureReason
PERMANENT = Traits(permanent=True)
REJECTS = Traits(permanent=True, rejects=True)
BLOCK = Traits(permanent=True, block_timing=True)
SHORT = Traits(shortfall=True)
WAIT = Traits(waits=True)
NOTHING = Traits()


@pytest.mark.parametrize(
    ("reason", "traits"),
    [
        pytest.param(R.NONE, NOTHING, id="none"),
        pytest.param(R.INSUFFICIENT_CAPACITY, SHORT, id="insufficient-capacity"),
        pytest.param(R.QUOTA_EXCEEDED, SHORT, id="quota-exceeded"),
        pytest.param(R.JOIN_TIMEOUT, SHORT, id="join-timeout"),
        pytest.param(R.TOPOLOGY_SPREAD, SHORT, id="topology-spread"),
        pytest.param(R.THROTTLED, NOTHING, id="throttled"),
        pytest.param(R.WAITING_FOR_LAUNCH_BUDGET, WAIT, id="launch-budget"),
        pytest.param(R.WAITING_FOR_CAPACITY, WAIT, id="short-cell"),
        pytest.param(R.CAPACITY_RESERVATION_NOT_STARTED, WAIT, id="reservation-not-started"),
        pytest.param(R.PERMANENT_ERROR, PERMANENT, id="permanent-error"),
        pytest.param(R.NODE_ROLE_NOT_AUTHORIZED, PERMANENT, id="node-role"),
        pytest.param(R.INVALID_SUBNET, REJECTS, id="invalid-subnet"),
        pytest.param(R.CAPACITY_RESERVATION_MISMATCH, REJECTS, id="reservation-mismatch"),
        pytest.param(R.EFA_NOT_SUPPORTED, REJECTS, id="efa-not-supported"),
        pytest.param(R.EFA_SECURITY_GROUP, REJECTS, id="efa-security-group"),
        pytest.param(R.PLACEMENT_GROUP_CONFLICT, REJECTS, id="placement-group-conflict"),
        pytest.param(R.PLACEMENT_GROUP_NOT_FOUND, REJECTS, id="placement-group-not-found"),
        pytest.param(R.CAPACITY_BLOCK_TOO_SHORT, BLOCK, id="block-too-short"),
        pytest.param(R.CAPACITY_BLOCK_ENDING, BLOCK, id="block-ending"),
        pytest.param(R.INSTANCE_LOST, NOTHING, id="instance-lost"),
        pytest.param(R.NODE_NOT_READY, NOTHING, id="node-not-ready"),
        pytest.param(R.LEFTOVER, NOTHING, id="leftover"),
    ],
)
def test_the_classification_table(reason: FailureReason, traits: Traits) -> None:
    got = (reason.permanent, reason.rejects, reason.shortfall, reason.waits, reason.block_timing)
    assert got == (
        traits.permanent,
        traits.rejects,
        traits.shortfall,
        traits.waits,
        traits.block_timing,
    )


def test_every_reason_has_one_row() -> None:
    assert set(TRAITS) == set(FailureReason)


def test_only_permanent_reasons_reject_or_are_block_timing() -> None:
    assert all(r.permanent for r in FailureReason if r.rejects or r.block_timing)
    assert not [r for r in FailureReason if r.permanent and (r.shortfall or r.waits)]


@pytest.mark.parametrize("reason", list(FailureReason), ids=lambda r: r.value or "none")
def test_a_stored_name_reads_back_as_its_reason(reason: FailureReason) -> None:
    assert read_reason(reason.value) is reason
    status = GangNodePoolStatus.model_validate({"lastErrorReason": reason.value})
    assert status.lastErrorReason is reason  # the status model holds it typed
    assert status.model_dump(mode="json")["lastErrorReason"] == reason.value  # stored by name
    assert f"{reason}" == reason.value  # and Events and metrics show the name


def test_a_name_a_newer_release_wrote_stays_as_written_and_means_nothing_here() -> None:
    stored = pool().to_dict()
    stored["status"]["lastErrorReason"] = "SomethingANewerReleaseWrites"
    newer = GangNodePool.from_dict(stored).status.lastErrorReason
    assert isinstance(newer, UnknownReason)
    assert newer == "SomethingANewerReleaseWrites"  # messages show it as written
    traits = (newer.permanent, newer.rejects, newer.shortfall, newer.waits, newer.block_timing)
    assert traits == (False, False, False, False, False)
    written = GangNodePool.from_dict(stored).to_dict()["status"]["lastErrorReason"]
    assert written == "SomethingANewerReleaseWrites"  # a write keeps it


def test_an_absent_or_null_reason_reads_as_none() -> None:
    assert GangNodePoolStatus.model_validate({}).lastErrorReason is FailureReason.NONE
    assert read_reason(None) is FailureReason.NONE


def test_every_reason_written_to_status_is_a_member() -> None:
    """``update`` takes lastErrorReason as a FailureReason (mypy checks each write), and
    no status built in the provisioner passes it a string literal other than none."""
    assert get_type_hints(StatusChange)["lastErrorReason"] is FailureReason
    package = Path(atomic_gang_provisioner.__file__).parent
    writes = [
        (f"{path.relative_to(package)}:{node.lineno}", node.value)
        for path in sorted(package.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.keyword) and node.arg == "lastErrorReason"
    ]
    assert writes  # the phases do write it
    assert [where for where, value in writes if isinstance(value, ast.Constant)] == []

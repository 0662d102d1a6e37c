"""Strays: a managed instance of a live pool that the pool's status does not record
is released after a grace period, whatever its generation (a crash at the wrong
moment must not bill until max lifetime). A set the pool is acquiring (phase
Acquiring, its generation) is a launch in flight, or one whose response was lost,
that the pool adopts: never a stray, however old."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from atomic_gang_provisioner.cloud.values import Instance
from atomic_gang_provisioner.reconcilers.reaper import Reaper
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import IDS, T0, launched, pool
from tests.unit.reaper.test_sweep import listing, managed

HOUR = timedelta(hours=1)
# Joining at generation 1 with IDS recorded; the next launch would use generation 2.
JOINING: dict[str, Any] = {}
ACQUIRING = {"phase": "Acquiring", "acquireGeneration": 7, "claimKey": "k"}


def pool_object(phase: str, **status: Any) -> dict[str, Any]:
    if phase == "Joining":
        return launched(**status).to_dict()
    if phase == "Acquiring":
        return pool(**{**ACQUIRING, **status}).to_dict()
    return pool(claim=None, **status).to_dict()  # Idle: nothing recorded


def sweep(pool_obj: dict[str, Any], *listed: Instance) -> tuple[dict[str, int], FakeCloud]:
    cloud = listing(*listed)
    ctx = replace(
        context(
            settings=settings(),
            transport=RecordingTransport(),
            pools=FakeCache([pool_obj]),
            now=lambda: T0,
        ),
        janitor=cloud,
    )
    return Reaper(ctx, interval=60).sweep(), cloud


@pytest.mark.parametrize(
    ("phase", "status", "generation", "age", "reaped"),
    [
        # Today's only stray: an older generation than the active set.
        pytest.param("Joining", {}, 0, HOUR, True, id="older-generation"),
        pytest.param("Joining", {}, None, HOUR, True, id="no-generation-tag"),
        # The hole: a set of the current (or a newer) generation that status lost.
        pytest.param("Joining", {}, 1, HOUR, True, id="current-generation-unrecorded"),
        pytest.param("Joining", {}, 2, HOUR, True, id="newer-generation-not-acquiring"),
        pytest.param("Idle", {}, 3, HOUR, True, id="idle-pool-keeps-nothing"),
        pytest.param(
            "Idle", {"activeGeneration": 3}, 3, HOUR, True, id="idle-after-release-same-gen"
        ),
        # The grace period covers a launch whose status write (or our cache) lags.
        pytest.param("Joining", {}, 1, timedelta(minutes=5), False, id="young-within-grace"),
        pytest.param("Idle", {}, 3, timedelta(minutes=14), False, id="idle-young-within-grace"),
        # A set the pool is acquiring is adopted, never reaped, whatever its age.
        pytest.param("Acquiring", {}, 7, HOUR, False, id="acquiring-generation-adopted"),
        pytest.param("Acquiring", {}, 7, 3 * HOUR, False, id="lost-response-old-but-adopted"),
        pytest.param(
            "Acquiring", {"activeGeneration": 6}, 7, HOUR, False, id="re-acquiring-after-release"
        ),
        pytest.param(
            "Acquiring", {"activeGeneration": 6}, 6, HOUR, True, id="previous-set-while-acquiring"
        ),
        pytest.param("Acquiring", {}, 8, HOUR, True, id="not-the-acquiring-generation"),
        pytest.param(
            "Acquiring", {"deleting": True}, 7, HOUR, False, id="deleting-acquiring-finds-it"
        ),
    ],
)
def test_unrecorded_instances(
    phase: str, status: dict[str, Any], generation: int | None, age: timedelta, reaped: bool
) -> None:
    listed = managed("i-x", "pretrain", generation=generation, age=age)
    done, cloud = sweep(pool_object(phase, **status), listed)
    assert done == ({"stray": 1} if reaped else {})
    assert [q.instance_ids for q in cloud.requests("release")] == ([("i-x",)] if reaped else [])


@pytest.mark.parametrize("generation", [0, 1, 2, None])
def test_recorded_instances_are_never_strays(generation: int | None) -> None:
    """Status is the record: an id it holds stays, whatever its tag says."""
    listed = [managed(i, "pretrain", generation=generation, age=HOUR) for i in IDS]
    assert sweep(pool_object("Joining"), *listed)[0] == {}


def test_max_lifetime_still_applies_to_a_set_being_adopted() -> None:
    old = managed("i-x", "pretrain", generation=7, age=7 * HOUR)  # past the default 4h
    assert sweep(pool_object("Acquiring"), old)[0] == {"max-lifetime": 1}

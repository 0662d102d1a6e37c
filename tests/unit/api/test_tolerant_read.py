"""Rolling upgrades: a GangNodePool read from the apiserver keeps the fields a newer
release wrote, and writes them back unchanged; built in code, the models stay strict
(a typo in one of our own field names is an error)."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from atomic_gang_provisioner.api import Condition, GangNodePool, GangNodePoolStatus
from atomic_gang_provisioner.pool.model import update
from atomic_gang_provisioner.pool.report import refresh
from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.views.node import INSTANCE_INDEX, instance_index
from atomic_gang_provisioner.views.pool_object import POOL_INDEXERS
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import KNOBS, T0, launched

NEWER = {"warmPoolTier": "gold", "drain": {"startedAt": "2026-11-29T11:00:00Z", "nodes": 2}}


def newer_object() -> dict[str, Any]:
    """A pool as a newer release stores it: unknown fields at every level we model."""
    joining = Condition(
        type="Ready",
        status="False",
        reason="Joining",
        message="0/4",
        lastTransitionTime=T0,
        observedGeneration=1,
    )
    base = update(launched().status, conditions=[joining])
    obj = launched().model_copy(update={"status": base}).to_dict()
    obj["futureTopLevel"] = True
    obj["spec"]["priorityClass"] = "high"
    obj["spec"]["shape"]["hugepages"] = {"interfaces": 4}
    obj["spec"]["claim"]["tenant"] = "team-a"
    obj["status"].update(copy.deepcopy(NEWER))
    obj["status"]["conditions"][0]["severity"] = "Info"
    return obj


def test_reading_keeps_every_unknown_field_and_writing_returns_it() -> None:
    obj = newer_object()
    assert GangNodePool.from_dict(obj).to_dict() == obj


def test_a_status_update_keeps_the_unknown_fields() -> None:
    pool = GangNodePool.from_dict(newer_object())
    moved = update(pool.status, phase="Releasing", lastError="x")
    dumped = moved.model_dump(mode="json")
    assert dumped["phase"] == "Releasing"
    assert {k: dumped[k] for k in NEWER} == NEWER


def test_a_rewritten_condition_keeps_its_unknown_fields() -> None:
    pool = GangNodePool.from_dict(newer_object())
    flipped = refresh(pool, update(pool.status, phase="Satisfied"), knobs=KNOBS, now=T0)
    (cond,) = [x for x in flipped.model_dump(mode="json")["conditions"] if x["type"] == "Ready"]
    assert (cond["status"], cond["severity"]) == ("True", "Info")


def test_the_models_stay_strict_when_built_in_code() -> None:
    with pytest.raises(ValidationError, match="phse"):
        GangNodePoolStatus(phse="Idle")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="warmPoolTier"):
        GangNodePool.model_validate(newer_object())  # only from_dict reads tolerantly


def test_two_reads_of_the_same_object_are_equal_and_differ_from_one_without_extras() -> None:
    """The executor writes only when the status changed: unknown fields count."""
    a, b = GangNodePool.from_dict(newer_object()), GangNodePool.from_dict(newer_object())
    assert a.status == b.status
    assert a.status != launched().status


def test_the_pool_reconciler_reconciles_a_newer_pool_and_writes_its_fields_back() -> None:
    transport = RecordingTransport()
    ctx = context(
        settings=settings(),
        transport=transport,
        pools=FakeCache([newer_object()], POOL_INDEXERS),
        now=lambda: T0 + timedelta(seconds=601),  # past the join deadline: a status write
    )
    nodes = FakeCache([], {INSTANCE_INDEX: instance_index})
    ctx = replace(ctx, nodes=nodes, launcher=FakeCloud.unused())
    PoolReconciler(ctx).reconcile("pretrain")
    (put,) = [w for w in transport.writes() if w.path.endswith("/status")]
    assert put.body["status"]["phase"] == "Releasing"
    assert {k: put.body["status"][k] for k in NEWER} == NEWER
    assert put.body["spec"]["shape"]["hugepages"] == {"interfaces": 4}
    assert put.body["futureTopLevel"] is True

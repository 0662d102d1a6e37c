"""Our own writes (pools, Workload checks) are read before the watch brings them, never after."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_provisioner.reconcilers import latest as latest_module
from atomic_gang_provisioner.reconcilers.latest import LatestWrites
from tests.support.kubefakes import FakeCache


def pool(rv: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "resourceVersion": rv}, "status": {"phase": phase}}


def test_our_newer_write_is_read_until_the_cache_catches_up() -> None:
    cache = FakeCache([pool("10", "Joining")])
    latest = LatestWrites(cache)
    latest.remember(pool("12", "Satisfied"))
    assert latest.newest("p") == pool("12", "Satisfied")  # the watch has not brought it yet
    cache.upsert("p", pool("13", "Satisfied"))  # someone wrote after us; the cache has it
    assert latest.newest("p") == pool("13", "Satisfied")
    latest.remember(pool("11", "Joining"))  # older than the cache: ignored
    assert latest.newest("p") == pool("13", "Satisfied")


def test_a_pool_gone_from_the_cache_is_gone() -> None:
    latest = LatestWrites(FakeCache([]))
    latest.remember(pool("12", "Satisfied"))
    assert latest.newest("p") is None


def test_a_namespaced_write_is_kept_under_its_namespace_and_name() -> None:
    def workload(rv: str, state: str) -> dict[str, Any]:
        meta = {"namespace": "team", "name": "w", "resourceVersion": rv}
        return {"metadata": meta, "status": {"admissionChecks": [{"state": state}]}}

    cache = FakeCache([])
    cache.upsert("team/w", workload("20", "Pending"))
    latest = LatestWrites(cache)
    latest.remember(workload("21", "Ready"))  # our apply's answer: the next one builds on it
    assert latest.newest("team/w") == workload("21", "Ready")
    assert latest.newest("w") is None


def test_only_the_update_that_brings_our_last_write_is_its_echo() -> None:
    cache = FakeCache([pool("10", "Joining")])
    latest = LatestWrites(cache)
    latest.remember(pool("12", "Satisfied"))
    assert latest.echoes(pool("10", "Joining"), pool("12", "Satisfied"))
    assert not latest.echoes(pool("12", "Satisfied"), pool("12", "Satisfied"))  # a resync
    assert not latest.echoes(pool("12", "Satisfied"), pool("13", "Satisfied"))  # another writer
    assert not latest.echoes(pool("10", "Joining"), pool("11", "Joining"))  # before ours
    cache.remove("p")
    assert latest.newest("p") is None
    assert not latest.echoes(pool("10", "Joining"), pool("12", "Satisfied"))  # forgotten


def test_the_oldest_writes_are_forgotten_beyond_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Node of a released gang may never be read again: what we remember is bounded."""
    monkeypatch.setattr(latest_module, "KEPT", 2)
    cache = FakeCache([pool("10", "Joining")])
    latest = LatestWrites(cache)
    for name in ("a", "b", "p"):
        latest.remember({"metadata": {"name": name, "resourceVersion": "12"}})
    assert latest.newest("p") == {"metadata": {"name": "p", "resourceVersion": "12"}}
    assert len(latest._written) == len(latest._last) == 2
    assert not latest.echoes(
        {"metadata": {"name": "a", "resourceVersion": "1"}},
        {"metadata": {"name": "a", "resourceVersion": "12"}},
    )

"""Our own pool writes are read before the watch brings them, never after."""

from __future__ import annotations

from typing import Any

from atomic_gang_provisioner.reconcilers.latest import LatestPools
from tests.support.kubefakes import FakeCache


def pool(rv: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "resourceVersion": rv}, "status": {"phase": phase}}


def test_our_newer_write_is_read_until_the_cache_catches_up() -> None:
    cache = FakeCache([pool("10", "Joining")])
    latest = LatestPools(cache)
    latest.remember(pool("12", "Satisfied"))
    assert latest.get("p") == pool("12", "Satisfied")  # the watch has not brought it yet
    cache.upsert("p", pool("13", "Satisfied"))  # someone wrote after us; the cache has it
    assert latest.get("p") == pool("13", "Satisfied")
    latest.remember(pool("11", "Joining"))  # older than the cache: ignored
    assert latest.get("p") == pool("13", "Satisfied")


def test_a_pool_gone_from_the_cache_is_gone() -> None:
    latest = LatestPools(FakeCache([]))
    latest.remember(pool("12", "Satisfied"))
    assert latest.get("p") is None

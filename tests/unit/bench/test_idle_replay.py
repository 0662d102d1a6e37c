"""The idle-cost replay (bench/idle_replay.py): the trace through the real ShortCells."""

from __future__ import annotations

import statistics

from bench.idle_replay import replay


def test_every_job_finishes_and_a_seed_replays_the_same() -> None:
    first = replay(3)
    assert first.finished == 48
    assert replay(3) == first
    assert 0 < first.failed < 60  # the cache: one probe at a time, not one per pool


def test_the_owed_rule_shortens_the_longest_wait() -> None:
    shipped = statistics.mean(replay(seed).max for seed in range(20))
    never_owed = statistics.mean(replay(seed, owed_after=1e9).max for seed in range(20))
    assert shipped < never_owed - 2


def test_without_the_cache_every_pool_probes_and_fails_far_more() -> None:
    cached = [replay(seed) for seed in range(3)]
    today = [replay(seed, cache_off=True) for seed in range(3)]
    assert all(o.finished == 48 for o in today)
    assert statistics.mean(o.failed for o in today) > 4 * statistics.mean(o.failed for o in cached)

"""Simulator knobs: drop rules and the per-instance boot delay."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from atomic_gang_nodesim.knobs import BootDelay, DropRule, Knobs


def test_drop_rules_match_by_id_pool_or_ordinal_and_run_out() -> None:
    knobs = Knobs(drops=[DropRule(pool="p", count=2), DropRule(nth=5), DropRule(instanceId="i-9")])
    assert knobs.take_drop(instance_id="i-1", pool="q", ordinal=1) is None
    assert knobs.take_drop(instance_id="i-2", pool="p", ordinal=2) is knobs.drops[0]
    assert knobs.take_drop(instance_id="i-3", pool="p", ordinal=3) is knobs.drops[0]
    assert knobs.take_drop(instance_id="i-4", pool="p", ordinal=4) is None  # used up
    assert knobs.take_drop(instance_id="i-5", pool="q", ordinal=5) is knobs.drops[1]
    assert knobs.take_drop(instance_id="i-9", pool="q", ordinal=9) is knobs.drops[2]


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({}, id="none"),
        pytest.param({"pool": "p", "nth": 1}, id="two"),
        pytest.param({"nth": 0}, id="nth-zero"),
        pytest.param({"pool": "p", "extra": 1}, id="unknown-field"),
    ],
)
def test_bad_drop_rules(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        DropRule.model_validate(fields)


def test_boot_delay_is_deterministic_and_bounded() -> None:
    boot = BootDelay(seconds=2, jitter=3)
    delays = [boot.for_instance(f"i-{n}") for n in range(50)]
    assert all(2 <= d <= 5 for d in delays)
    assert len(set(delays)) > 10
    assert boot.for_instance("i-7") == BootDelay(seconds=2, jitter=3).for_instance("i-7")
    assert BootDelay(seconds=1).for_instance("i-7") == 1

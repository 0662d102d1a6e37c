"""The reaper's pure classification."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from atomic_gang import GoDuration
from atomic_gang_provisioner.cloud.leaks import PoolView, find_leaks
from atomic_gang_provisioner.cloud.values import Instance, tag_tuple

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
DEFAULT_LIFE = GoDuration.of(hours=4)


def inst(
    iid: str = "i-1",
    *,
    age: timedelta = timedelta(minutes=30),
    pool: str | None = "p",
    generation: int = 2,
    state: str = "running",
    extra: dict[str, str] | None = None,
) -> Instance:
    tags = {
        "atomic-gang.k8s.aws/managed": "true",
        "atomic-gang.k8s.aws/generation": str(generation),
    }
    if pool is not None:
        tags["atomic-gang.k8s.aws/pool"] = pool
    tags.update(extra or {})
    return Instance(
        instance_id=iid,
        state=state,
        availability_zone="us-east-1a",
        instance_type="p4d.24xlarge",
        launch_time=NOW - age,
        tags=tag_tuple(tags),
    )


POOLS = {
    "p": PoolView(instance_ids=frozenset({"i-1"})),
    "acquiring": PoolView(adopting=3),
    "unreadable": PoolView(readable=False),
}


@pytest.mark.parametrize(
    ("instance", "reason"),
    [
        pytest.param(inst(), None, id="owned-and-young"),
        pytest.param(inst(age=timedelta(hours=5)), "max-lifetime", id="default-max-lifetime"),
        pytest.param(
            inst(age=timedelta(hours=2), extra={"atomic-gang.k8s.aws/max-lifetime": "1h"}),
            "max-lifetime",
            id="tagged-max-lifetime",
        ),
        pytest.param(
            inst(extra={"atomic-gang.k8s.aws/keep-warm-until": "2030-01-01T11:59:00Z"}),
            "keep-warm-expired",
            id="keep-warm-expired",
        ),
        pytest.param(
            inst(extra={"atomic-gang.k8s.aws/keep-warm-until": "2030-01-01T12:30:00+00:00"}),
            None,
            id="keep-warm-running",
        ),
        pytest.param(
            inst(extra={"atomic-gang.k8s.aws/keep-warm-until": ""}), None, id="keep-warm-cleared"
        ),
        pytest.param(inst(pool="gone"), "orphaned", id="unknown-pool"),
        pytest.param(inst(pool=None), "orphaned", id="no-pool-tag"),
        pytest.param(inst("i-9", age=timedelta(hours=1)), "stray", id="not-recorded"),
        pytest.param(inst("i-9", age=timedelta(minutes=5)), None, id="stray-within-grace"),
        pytest.param(inst("i-9", age=timedelta(minutes=15)), None, id="stray-at-the-end-of-grace"),
        pytest.param(
            inst("i-9", age=timedelta(minutes=15, seconds=1)), "stray", id="stray-past-grace"
        ),
        pytest.param(
            inst("i-9", pool="acquiring", generation=3, age=timedelta(hours=1)),
            None,
            id="being-adopted",
        ),
        pytest.param(
            inst("i-9", pool="acquiring", generation=2, age=timedelta(hours=1)),
            "stray",
            id="acquiring-another-generation",
        ),
        pytest.param(
            inst("i-9", pool="unreadable", age=timedelta(hours=1)), None, id="unreadable-pool"
        ),
        pytest.param(
            inst("i-9", pool="unreadable", age=timedelta(hours=5)),
            "max-lifetime",
            id="unreadable-pool-still-age-capped",
        ),
        pytest.param(inst(pool="gone", state="terminated"), None, id="terminated-ignored"),
    ],
)
def test_classify(instance: Instance, reason: str | None) -> None:
    found = find_leaks([instance], now=NOW, pools=POOLS, default_max_lifetime=DEFAULT_LIFE)
    assert [r.reason for r in found] == ([reason] if reason else [])


def test_unmanaged_instances_are_never_reaped() -> None:
    unmanaged = Instance(
        instance_id="i-x",
        state="running",
        availability_zone="a",
        instance_type="t3.micro",
        launch_time=NOW - timedelta(days=30),
    )
    assert find_leaks([unmanaged], now=NOW, pools={}, default_max_lifetime=DEFAULT_LIFE) == ()


def test_max_lifetime_wins_and_detail_is_specific() -> None:
    old_orphan = inst(pool="gone", age=timedelta(hours=9))
    (reap,) = find_leaks([old_orphan], now=NOW, pools={}, default_max_lifetime=DEFAULT_LIFE)
    assert reap.reason == "max-lifetime"
    assert "4h0m0s" in reap.detail


def test_keep_warm_grace_lets_the_pool_timer_win() -> None:
    warm = inst(extra={"atomic-gang.k8s.aws/keep-warm-until": "2030-01-01T11:59:45Z"})
    kwargs = {"now": NOW, "pools": POOLS, "default_max_lifetime": GoDuration.of(hours=4)}
    assert find_leaks([warm], **kwargs) != ()  # type: ignore[arg-type]
    graced = find_leaks([warm], keep_warm_grace=timedelta(seconds=30), **kwargs)  # type: ignore[arg-type]
    assert graced == ()

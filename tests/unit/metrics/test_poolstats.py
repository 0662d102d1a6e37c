"""Pools by phase and the age of each claim still waiting, read from the cache at scrape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from atomic_gang_provisioner.poolstats import PHASES, PoolStats

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SHAPE = {
    "count": 4,
    "instanceType": "p4d.24xlarge",
    "mode": "runinstances",
    "region": "us-east-1",
    "nodeRoleArn": "arn:aws:iam::123456789012:role/node",
    "maxLifetime": "24h",
    "amiVariant": "nvidia",
}


def pool(name: str, phase: str, *, claimed_ago: float | None) -> dict[str, object]:
    spec: dict[str, object] = {"shape": SHAPE}
    if claimed_ago is not None:
        at = (NOW - timedelta(seconds=claimed_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        spec["claim"] = {"namespace": "team-a", "name": f"wl-{name}", "uid": "u", "claimedAt": at}
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


def samples(stats: PoolStats) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(stats)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_phases_counted_and_only_waiting_claims_age() -> None:
    pools = [
        pool("a", "Acquiring", claimed_ago=120),
        pool("b", "Joining", claimed_ago=30),
        pool("c", "Satisfied", claimed_ago=600),  # formed: not pending
        pool("d", "KeepWarm", claimed_ago=None),
        {"metadata": {"name": "broken"}, "spec": {"shape": {"count": "many"}}},
    ]
    got = samples(PoolStats(lambda: pools, now=lambda: NOW))
    by_phase = {dict(k[1])["phase"]: v for k, v in got.items() if k[0] == "atomic_gang_pools"}
    assert set(by_phase) == set(PHASES)
    assert (by_phase["Acquiring"], by_phase["Joining"], by_phase["Satisfied"]) == (1, 1, 1)
    assert (by_phase["KeepWarm"], by_phase["Idle"]) == (1, 0)
    ages = {
        dict(k[1])["pool"]: (dict(k[1])["workload"], v)
        for k, v in got.items()
        if k[0] == "atomic_gang_pending_claim_age_seconds"
    }
    assert ages == {"a": ("wl-a", 120.0), "b": ("wl-b", 30.0)}


def test_a_standby_exports_the_families_without_samples() -> None:
    got = samples(
        PoolStats(lambda: [pool("a", "Acquiring", claimed_ago=1)], exporting=lambda: False)
    )
    assert got == {}

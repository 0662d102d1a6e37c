"""Gauges read from the pool cache at scrape time: pools by phase, and how long each
claim the pool has not yet satisfied has waited (the "gang pending too long" alert).

Nothing is counted on the reconcile path: a scrape walks the cache (one entry per
pool). Only the leader exports them, as for the cost ledger, so an alert over all
replicas sees each pool once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, Final, get_args

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import ValidationError

from atomic_gang_provisioner.api.gang_node_pool import GangNodePool, Phase

POOLS: Final = "atomic_gang_pools"
PENDING_AGE: Final = "atomic_gang_pending_claim_age_seconds"
PHASES: Final[tuple[Phase, ...]] = get_args(Phase)
# Phases in which a claim waits for its gang (Degraded: it gets Retry, then waits again).
WAITING: Final = frozenset({"Idle", "Acquiring", "Joining", "Degraded"})


def _utcnow() -> datetime:
    return datetime.now(UTC)


class PoolStats(Collector):
    """Registered with the other metrics; the manager points ``pools`` at its cache."""

    def __init__(
        self,
        pools: Callable[[], Iterable[dict[str, Any]]] = tuple,
        *,
        exporting: Callable[[], bool] = lambda: True,
        now: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.pools, self.exporting, self._now = pools, exporting, now

    def describe(self) -> Iterator[Metric]:
        return iter(self._families())

    def collect(self) -> Iterator[Metric]:
        by_phase, pending = self._families()
        if not self.exporting():
            yield from (by_phase, pending)
            return
        counts = dict.fromkeys(PHASES, 0)
        now = self._now()
        for obj in self.pools():
            try:
                pool = GangNodePool.from_dict(dict(obj))
            except ValidationError:  # a malformed pool: the pool reconciler reports it
                continue
            counts[pool.status.phase] += 1
            claim = pool.spec.claim
            since = (claim.claimedAt if claim else None) or pool.status.acquiringSince
            if claim is not None and since is not None and pool.status.phase in WAITING:
                age = (now - since).total_seconds()
                pending.add_metric([pool.name, claim.namespace, claim.name], age)
        for phase, n in counts.items():
            by_phase.add_metric([phase], n)
        yield from (by_phase, pending)

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(POOLS, "GangNodePools by phase.", labels=["phase"]),
            GaugeMetricFamily(
                PENDING_AGE,
                "Seconds a claim has waited for its gang (pools not yet Satisfied).",
                labels=["pool", "workload_namespace", "workload"],
            ),
        )

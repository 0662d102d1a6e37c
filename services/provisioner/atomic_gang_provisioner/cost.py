"""Instance-seconds billed, by what the gang was doing: ``atomic_gang_instance_seconds_total``.

The ledger is fed every version of every pool the informer sees, i.e. the controller's
own status writes: from one version to the next, a pool held ``len(status.instanceIds)``
instances in the state its phase names (:func:`state_of`). A scrape adds the open
interval of each pool's latest version, so the counter does not wait for the next write.
A deleted pool keeps its series (a counter never goes back). Every replica keeps the
ledger (a standby's caches are warm too); only the leader exports it, so the cluster's
total is never counted twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from atomic_gang_provisioner.views.pool_object import PoolObject

CostState = Literal["stranded", "launching", "running", "repairing", "keep-warm", "releasing"]
COST_STATES: Final[tuple[CostState, ...]] = get_args(CostState)
INSTANCE_SECONDS: Final = "atomic_gang_instance_seconds"
_BY_PHASE: Final[dict[str, CostState]] = {
    "Acquiring": "launching",
    "Joining": "launching",
    "Satisfied": "running",
    # The kept nodes hold the running pods while the replacements come: fewer than N
    # held, by plan, not stranded.
    "Repairing": "repairing",
    "KeepWarm": "keep-warm",
    "Releasing": "releasing",
    "Degraded": "releasing",  # a formed gang lost a member: the rest is being released
}


def state_of(*, phase: str, held: int, count: int) -> CostState | None:
    """What ``held`` instances of a pool in ``phase`` (gang size ``count``) bill as.

    Fewer than N held outside a release or a repair is a stranded partial set (an N-or-0
    provisioner must never have one); so is a full set in a phase that uses none.
    """
    if held == 0:
        return None
    state = _BY_PHASE.get(phase)
    if state in ("releasing", "repairing"):
        return state
    return "stranded" if state is None or held < count else state


@dataclass(frozen=True, slots=True)
class _Held:
    state: CostState | None
    instances: int
    since: float


class CostLedger(Collector):
    """Instance-seconds per (pool, state); thread-safe (informer thread and scrapes)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        exporting: Callable[[], bool] = lambda: True,
    ) -> None:
        self._clock, self.exporting = clock, exporting
        self._lock = threading.Lock()
        self._closed: dict[tuple[str, CostState], float] = {}
        self._open: dict[str, _Held] = {}

    def observe(self, pool: str, *, phase: str, held: int, count: int) -> None:
        """A version of ``pool`` was written: close the last interval, open the next."""
        now = self._clock()
        with self._lock:
            self._close(pool, now)
            self._open[pool] = _Held(state_of(phase=phase, held=held, count=count), held, now)

    def seen(self, obj: Mapping[str, Any]) -> None:
        """An informer's add or update of a GangNodePool (its raw object)."""
        pool = PoolObject(obj)
        self.observe(pool.name, phase=pool.phase, held=len(pool.instance_ids), count=pool.count)

    def gone(self, obj: Mapping[str, Any]) -> None:
        self.forget(PoolObject(obj).name)

    def forget(self, pool: str) -> None:
        """The pool is gone: bill its last interval up to now, then stop."""
        now = self._clock()
        with self._lock:
            self._close(pool, now)
            self._open.pop(pool, None)

    def totals(self) -> dict[tuple[str, CostState], float]:
        """Seconds so far, open intervals included."""
        now = self._clock()
        with self._lock:
            out = dict(self._closed)
            for pool, held in self._open.items():
                if held.state is not None:
                    key = (pool, held.state)
                    out[key] = out.get(key, 0.0) + held.instances * (now - held.since)
        return out

    def _close(self, pool: str, now: float) -> None:
        held = self._open.get(pool)
        if held is not None and held.state is not None:
            key = (pool, held.state)
            self._closed[key] = self._closed.get(key, 0.0) + held.instances * (now - held.since)

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        fam = self._family()
        if self.exporting():
            for (pool, state), seconds in sorted(self.totals().items()):
                fam.add_metric([pool, state], seconds)
        yield fam

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            INSTANCE_SECONDS,
            "Instance-seconds billed per pool, by what the gang was doing "
            "(stranded: a partial set, must stay 0; launching; running; keep-warm; releasing).",
            labels=["pool", "state"],
        )

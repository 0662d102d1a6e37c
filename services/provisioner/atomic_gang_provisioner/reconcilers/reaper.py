"""The reaper: a periodic, leader-only leak backstop.

One paginated listing of this cluster's managed instances, the pure
``classify`` against what the pool caches say, then the full release path
(ENI-aware) for anything past max lifetime, past keep-warm, or orphaned.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.cloud.reaper import PoolView, classify
from atomic_gang_provisioner.cloud.types import ReleaseRequest
from atomic_gang_provisioner.reconcilers.context import Context

log = logging.getLogger("atomic_gang_provisioner.reaper")
KEEP_WARM_GRACE = timedelta(seconds=30)


class Reaper:
    def __init__(
        self, ctx: Context, *, interval: float, probe: Callable[[], None] | None = None
    ) -> None:
        self.ctx = ctx
        self.interval = interval
        self._probe = probe  # re-resolves the cluster while that probe is failing
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self) -> dict[str, int]:
        """One pass; returns instances released by reason. Also the cloud health probe."""
        health = self.ctx.cloud_health
        if self._probe is not None and health.failing("cluster"):
            try:
                self._probe()
                health.report("", probe="cluster")
            except Exception as exc:
                health.report(f"{type(exc).__name__}: {exc}"[:500], probe="cluster")
        try:
            done = self._sweep()
        except Exception as exc:
            self.ctx.cloud_health.report(f"{type(exc).__name__}: {exc}"[:500])
            raise
        self.ctx.cloud_health.report("")
        return done

    def _sweep(self) -> dict[str, int]:
        ctx = self.ctx
        if not ctx.pools.has_synced():
            return {}  # an empty cache would make every instance look orphaned
        pools: dict[str, PoolView] = {}
        for obj in ctx.pools.list():
            pool = GangNodePool.from_dict(obj)
            pools[pool.name] = PoolView(
                generation=pool.status.activeGeneration or None,
                instance_ids=frozenset(pool.status.instanceIds),
            )
        reaps = classify(
            ctx.cloud.list_owned(),
            now=ctx.now(),
            pools=pools,
            default_max_lifetime=ctx.settings.defaults.maxLifetime,
            # The pool's own timer releases a warm set at keepWarmUntil; the reaper is the
            # backstop for a controller that was down, so it does not race that timer.
            keep_warm_grace=KEEP_WARM_GRACE,
        )
        if not reaps:
            ctx.metrics.sweeps.inc()
            return {}
        ctx.must_lead()
        ctx.cloud.release(ReleaseRequest(instance_ids=tuple(r.instance_id for r in reaps)))
        ctx.metrics.sweeps.inc()
        counts = Counter(r.reason for r in reaps)
        for reason, n in counts.items():
            ctx.metrics.reaped.labels(reason).inc(n)
        for r in reaps:
            log.warning(
                "reaped instance",
                extra={"instance": r.instance_id, "reason": r.reason, "detail": r.detail},
            )
        return {str(reason): n for reason, n in counts.items()}

    def _run(self) -> None:
        while True:  # first sweep at once: it also tells the AdmissionCheck the cloud works
            try:
                self.sweep()
            except Exception:
                log.exception("reaper sweep failed; next sweep in %ss", self.interval)
            if self._stop.wait(self.interval):
                return

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="reaper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

"""The reaper: a periodic, leader-only leak backstop.

One paginated listing of this cluster's managed instances, the pure
``find_leaks`` against what the pool caches say, then the full release path
(ENI-aware) for anything past max lifetime, past keep-warm, orphaned or stray.
ENIs still attached when a release returns are retried on the next sweeps, and
a new leader's first sweep finds again those its predecessor left (EC2 lists
ended instances for about an hour); instances count as reaped only once their
release succeeded.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import get_args

from pydantic import ValidationError

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.leaks import (
    PoolView,
    Reap,
    ReapReason,
    find_leaks,
    orphaned_groups,
)
from atomic_gang_provisioner.cloud.values import Instance, PlacementGroup, ReleaseRequest
from atomic_gang_provisioner.reconcilers.context import Context, NotLeaderError
from atomic_gang_provisioner.views.pool_object import PoolObject

log = logging.getLogger("atomic_gang_provisioner.reaper")
KEEP_WARM_GRACE = timedelta(seconds=30)
# Phases whose acquireGeneration may have a launched set status does not record yet.
ADOPTING = ("Acquiring", "Repairing")
EXPECTED = (CloudError, NotLeaderError, ValidationError)


def _verdict(exc: CloudError) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


class Reaper:
    def __init__(
        self, ctx: Context, *, interval: float, probe: Callable[[], None] | None = None
    ) -> None:
        self.ctx = ctx
        self.interval = interval
        self._probe = probe  # resolves the cluster: at start-up, then while it fails
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending_enis: set[str] = set()
        self._recovered = False

    def sweep(self) -> dict[str, int]:
        """One pass; returns instances released by reason. Also the cloud health probe.

        Only a classified cloud error (:class:`CloudError`) changes cloud health, and
        with it the AdmissionCheck's ``Active`` condition: lost leadership or a bug is
        counted and logged, and leaves the last verdict as it was.
        """
        if self.ctx.cloud_health.failing("cluster"):
            self.check_cluster()
        try:
            done = self._sweep()
            self._prune_templates()  # after the leaks: a failure here stops nothing of theirs
        except CloudError as exc:
            self._failed("sweep", exc)
            self.ctx.cloud_health.report(_verdict(exc))
            raise
        except Exception as exc:
            self._failed("sweep", exc)
            raise
        self.ctx.cloud_health.report("")
        return done

    def check_cluster(self) -> None:
        """Resolve the cluster (start-up warm-up, then while that probe is failing)."""
        if self._probe is None:
            return
        try:
            self._probe()
        except CloudError as exc:
            self._failed("cluster probe", exc)
            self.ctx.cloud_health.report(_verdict(exc), probe="cluster")
            return
        except Exception as exc:
            self._failed("cluster probe", exc)
            return
        self.ctx.cloud_health.report("", probe="cluster")

    def _failed(self, step: str, exc: Exception, *, pool: str | None = None) -> None:
        self.ctx.metrics.reconcile_errors.labels("reaper").inc()
        where = {"pool": pool} if pool is not None else {}
        log.warning(
            "reaper %s failed; the next sweep tries again",
            step,
            extra={**where, "error": f"{type(exc).__name__}: {exc}"},
            exc_info=not isinstance(exc, EXPECTED),  # a traceback only for a bug
        )

    def _sweep(self) -> dict[str, int]:
        ctx = self.ctx
        if not ctx.pools.has_synced():
            return {}  # an empty cache would make every instance look orphaned
        if not self._recovered:
            # A new leader is a new process: the ENIs its predecessor left pending were
            # in that process's memory. Find them again from EC2, once per term (a
            # failure raises and the next sweep tries again).
            self._pending_enis |= set(ctx.janitor.recover_enis())
            self._recovered = True
        # EC2 first, then the pools. A pool is in this process's cache before its first
        # launch (its reconcile reads it from there), so a pool created while EC2 was
        # being listed (seconds, with many instances) is in the later snapshot: its new
        # instances and group are never taken for orphans. The other order reaped them.
        owned, groups = ctx.janitor.list_owned(), ctx.janitor.list_placement_groups()
        pools = self._pool_views()
        reaps = self._classify(owned, pools)
        self._found(reaps)
        self._sweep_groups(groups, pools)
        if not reaps and not self._pending_enis:
            ctx.metrics.sweeps.inc()
            return {}
        ctx.must_lead()
        result = ctx.janitor.release(
            ReleaseRequest(
                instance_ids=tuple(r.instance_id for r in reaps),
                enis=tuple(sorted(self._pending_enis)),
            )
        )
        # A terminated instance is never listed again, so its ENIs that were still
        # attached at the deadline are retried from here on every sweep until deleted.
        self._pending_enis = set(result.pending_enis)
        ctx.metrics.sweeps.inc()
        if result.reason is not None:
            log.warning(
                "reaper release failed; the next sweep tries again",
                extra={"instances": [r.instance_id for r in reaps], "error": result.message},
            )
            return {}
        return self._record(reaps)

    def _pool_views(self) -> dict[str, PoolView]:
        pools: dict[str, PoolView] = {}
        for obj in self.ctx.pools.list():
            name = PoolObject(obj).name
            try:
                pool = GangNodePool.from_dict(obj)
            except ValidationError as exc:
                # One pool this replica cannot read must not stop the sweep of the
                # others; it exists, so its instances are neither orphans nor strays.
                self._failed("reading a pool", exc, pool=name)
                pools[name] = PoolView(readable=False)
                continue
            status = pool.status
            pools[pool.name] = PoolView(
                instance_ids=frozenset(status.instanceIds),
                adopting=status.acquireGeneration if status.phase in ADOPTING else None,
            )
        return pools

    def _classify(
        self, owned: tuple[Instance, ...], pools: dict[str, PoolView]
    ) -> tuple[Reap, ...]:
        ctx = self.ctx
        return find_leaks(
            owned,
            now=ctx.now(),
            pools=pools,
            default_max_lifetime=ctx.settings.defaults.max_lifetime,
            # The pool's own timer releases a warm set at keepWarmUntil; the reaper is the
            # backstop for a controller that was down, so it does not race that timer.
            keep_warm_grace=KEEP_WARM_GRACE,
        )

    def _found(self, reaps: tuple[Reap, ...]) -> None:
        """What this sweep found to reap, by reason, set before the release: a release that
        keeps failing keeps the gauge up (AtomicGangInstanceOverMaxLifetime)."""
        counts = Counter(r.reason for r in reaps)
        for reason in get_args(ReapReason):
            self.ctx.metrics.reapable.labels(reason).set(counts.get(reason, 0))

    def _sweep_groups(self, groups: tuple[PlacementGroup, ...], pools: dict[str, PoolView]) -> None:
        """Managed placement groups whose pool is gone. One still in use (its orphans
        are released below) is tried again next sweep."""
        ctx = self.ctx
        for group in orphaned_groups(groups, pools=pools):
            ctx.must_lead()
            if ctx.janitor.reap_placement_group(group.name):
                ctx.metrics.reaped_groups.inc()
                log.warning("reaped placement group", extra={"group": group.name})

    def _prune_templates(self) -> None:
        """Shared launch templates no launch used for an hour (a shape no pool has any
        more): free, but a region holds at most 5,000."""
        self.ctx.must_lead()
        for name in self.ctx.janitor.prune_templates():
            log.info("deleted an unused shared launch template", extra={"template": name})

    def _record(self, reaps: tuple[Reap, ...]) -> dict[str, int]:
        """Count and log what was terminated (only after the release succeeded)."""
        counts = Counter(r.reason for r in reaps)
        for reason, n in counts.items():
            self.ctx.metrics.reaped.labels(reason).inc(n)
        for r in reaps:
            log.warning(
                "reaped instance",
                extra={"instance": r.instance_id, "reason": r.reason, "detail": r.detail},
            )
        return {str(reason): n for reason, n in counts.items()}

    @property
    def pending_enis(self) -> frozenset[str]:
        """ENIs of reaped instances still to delete (retried every sweep)."""
        return frozenset(self._pending_enis)

    def _run(self) -> None:
        while True:  # first sweep at once: it also tells the AdmissionCheck the cloud works
            with contextlib.suppress(Exception):  # counted and logged by sweep
                self.sweep()
            if self._stop.wait(self.interval):
                return

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="reaper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

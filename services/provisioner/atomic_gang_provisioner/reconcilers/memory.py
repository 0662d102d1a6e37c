"""What the pool reconciler remembers between reconciles, in this process only.

Everything durable is in the pool's status; this is advisory. A new leader (or a
restart) starts with it empty and is only a little slower, never wrong:

- *fresh generations*: the generation this process introduced (wrote Acquiring at)
  and has not launched at yet. No set of it can exist, so the launch needs no tag
  lookup first (``adopt=False``). Without the entry the launch looks first: one call
  more, the same outcome.
- *progress writes*: when this process last wrote a joining gang's n/N. The next is
  rate-limited from it (``Observed.progress_written_at``); without it, one write
  sooner, once.

The latest-writes overlays (``latest.py``) are the third kind of such memory: our own
writes, read before the watch brings them.
"""

from __future__ import annotations

import threading
from datetime import datetime

from atomic_gang_provisioner.api import GangNodePoolStatus


class PoolMemory:
    def __init__(self) -> None:
        self._fresh: dict[str, int] = {}
        self._progress_at: dict[str, datetime] = {}
        # Different pools reconcile on several worker threads at once, all of them
        # touching the fresh map; one lock keeps it consistent.
        self._lock = threading.Lock()

    def progress_written_at(self, pool: str) -> datetime | None:
        return self._progress_at.get(pool)

    def take_fresh(self, pool: str, generation: int) -> bool:
        """Whether ``generation`` is one this process introduced and never launched at
        (the launch may skip the lookup for an earlier set); forgotten once asked."""
        with self._lock:
            return self._fresh.pop(pool, None) == generation

    def launched_nothing(self, pool: str, generation: int) -> None:
        """EC2 processed no launch: ``generation`` stays one no set can exist at."""
        with self._lock:
            self._fresh[pool] = generation

    def written(
        self, pool: str, old: GangNodePoolStatus, new: GangNodePoolStatus, now: datetime
    ) -> None:
        """A status write of ours: note a generation it introduced and a joining gang's
        n/N it moved. A pool's reconciles run one at a time, so its progress entry needs
        no lock."""
        introduced = new.phase == "Acquiring" and (
            old.phase != "Acquiring" or old.acquireGeneration != new.acquireGeneration
        )
        with self._lock:
            if introduced:
                self._fresh[pool] = new.acquireGeneration
            elif new.phase != "Acquiring" or self._fresh.get(pool) != new.acquireGeneration:
                self._fresh.pop(pool, None)
        counts = (new.readyCount, new.readyWithoutDevices)
        moved = counts != (old.readyCount, old.readyWithoutDevices)
        if new.phase == "Joining" and old.phase == "Joining" and moved:
            self._progress_at[pool] = now
        elif new.phase != "Joining":
            self._progress_at.pop(pool, None)

"""Pools waiting for one scarce thing (EC2's launch budget, a short capacity cell),
longest-waiting first.

A pool takes its place by when it started waiting (its acquisition's start, so a
retry keeps its place) and renews it each time it asks; a place not renewed within
its hold is dropped (the claim went away), so nobody waits behind a pool that left.
Placing and leaving cost O(log n) plus the shift of one sorted list; expiry is lazy.
"""

from __future__ import annotations

import bisect
import heapq
import threading

Place = tuple[float, str]  # (waiting since, epoch seconds; pool)


class WaitLine:
    def __init__(self) -> None:
        self._line: list[Place] = []
        self._place: dict[str, Place] = {}
        self._expires: dict[str, float] = {}
        self._expiry_heap: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._line)

    def ahead(self, pool: str, *, since: float, now: float, hold: float) -> int:
        """Take or renew ``pool``'s place until ``now + hold``; the pools ahead of it."""
        with self._lock:
            self._expire_locked(now)
            place = self._place.get(pool)
            if place is None or place[0] != since:
                self._remove_locked(pool)
                place = (since, pool)
                bisect.insort(self._line, place)
                self._place[pool] = place
            until = now + hold
            self._expires[pool] = until
            heapq.heappush(self._expiry_heap, (until, pool))
            return bisect.bisect_left(self._line, place)

    def leave(self, pool: str) -> None:
        with self._lock:
            self._remove_locked(pool)

    def order(self) -> list[Place]:
        """The places, longest-waiting first (a copy)."""
        with self._lock:
            return list(self._line)

    def _remove_locked(self, pool: str) -> None:
        place = self._place.pop(pool, None)
        self._expires.pop(pool, None)
        if place is not None:
            i = bisect.bisect_left(self._line, place)
            if i < len(self._line) and self._line[i] == place:
                del self._line[i]

    def _expire_locked(self, now: float) -> None:
        heap = self._expiry_heap
        while heap and heap[0][0] <= now:
            until, pool = heapq.heappop(heap)
            if self._expires.get(pool) == until:  # not renewed since
                self._remove_locked(pool)

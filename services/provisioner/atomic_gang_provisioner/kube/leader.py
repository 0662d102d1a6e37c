"""Leader election on a coordination.k8s.io/v1 Lease, after client-go's leaderelection.

Candidates try to take the Lease every ``retry_period``; it is free when nobody
holds it or when its record has not changed for ``leaseDurationSeconds`` of our
own clock (clocks of other hosts are never compared). Every write carries the
resourceVersion it read, so two candidates cannot both win. A leader renews
every ``retry_period``; if no renewal succeeds within ``renew_deadline`` of the
last one it stops leading at once, well before a standby may take over. A watch
on the Lease times expiry to the millisecond and makes a released Lease change
hands at once.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable

from atomic_gang.resources import LEASES
from atomic_gang_provisioner.kube.api_errors import ConflictError, KubeError, NotFoundError
from atomic_gang_provisioner.kube.client import KubeClient
from atomic_gang_provisioner.kube.informer import Handlers, Informer
from atomic_gang_provisioner.kube.lease import (
    LeaderElectionConfig,
    LeaseRecord,
    default_identity,
    lease_body,
    micro_time,
    record_of,
)
from atomic_gang_provisioner.kube.objects import KubeObject

log = logging.getLogger(__name__)
__all__ = ["LeaderElectionConfig", "LeaderElector", "default_identity"]
_rng = random.Random()  # noqa: S311 - jitter, not secrets


class LeaderElector:
    """Runs the election on its own thread; callbacks run on that thread, in order."""

    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        watch: bool = True,
    ) -> None:
        self.client, self.config, self._clock = client, config, clock
        self._started_cb, self._stopped_cb = on_started_leading, on_stopped_leading
        self._new_leader_cb = on_new_leader
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._leading = threading.Event()
        self._lease: KubeObject | None = None  # our last write, to renew without a GET
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._observed_rv = -1
        self._renewed_at = 0.0
        self._thread = threading.Thread(target=self._run, name="leader-elector", daemon=True)
        self._informer = self._lease_informer() if watch else None

    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def leader(self) -> str:
        """The holder we last observed ('' when the Lease is free or unseen)."""
        with self._lock:
            return self._observed.holder if self._observed else ""

    def is_leader(self) -> bool:
        """True only while leading *and* within the renew deadline of the last renewal."""
        with self._lock:
            fresh = self._clock() - self._renewed_at < self.config.renew_deadline
        return self._leading.is_set() and fresh

    def start(self) -> None:
        if self._informer is not None:
            self._informer.start()
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop leading (callback first, then release the Lease) and stop campaigning."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        if self._informer is not None:
            self._informer.stop(timeout)

    # -- the loop ----------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            if self._leading.is_set():
                self._renew_once()
            elif self._try(deadline=self._clock() + self.config.retry_period):
                self._become_leader()
            else:
                self._sleep(self._standby_wait())
        if self._leading.is_set():
            self._step_down()
            self._release()  # only after our reconcilers stopped: no overlap with the next leader

    def _become_leader(self) -> None:
        log.info("%s: acquired lease %s", self.identity, self.config.lease_name)
        self._leading.set()
        self._call(self._started_cb)

    def _step_down(self) -> None:
        self._leading.clear()
        log.warning("%s: stopped leading %s", self.identity, self.config.lease_name)
        self._call(self._stopped_cb)

    def _renew_once(self) -> None:
        with self._lock:
            deadline = self._renewed_at + self.config.renew_deadline
        self._sleep(min(self.config.retry_period, deadline - self._clock()))
        if self._stop.is_set():
            return
        if self._clock() < deadline and self._try(deadline=deadline):
            return
        if self._held_by_other() or self._clock() >= deadline:
            self._step_down()  # at once: a standby may take over only after lease_duration

    def _held_by_other(self) -> bool:
        with self._lock:
            rec = self._observed
        return rec is not None and bool(rec.holder) and rec.holder != self.identity

    def _standby_wait(self) -> float:
        wait = self.config.retry_period * (1.0 + 0.2 * _rng.random())
        with self._lock:
            rec, seen = self._observed, self._observed_at
        if rec is not None and rec.holder:
            wait = min(wait, max(seen + rec.duration - self._clock(), 0.0) + 0.001)
        return wait

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self._wake.wait(seconds):
            self._wake.clear()

    # -- one attempt -------------------------------------------------------------
    def _try(self, *, deadline: float) -> bool:
        """tryAcquireOrRenew: True if we hold the Lease after this attempt."""
        started = self._clock()  # a renewal counts from before the write: conservative
        try:
            lease = self._current(deadline)
            if lease is None:
                return self._write(None, deadline, started)
            rec = self._observe(lease)
            if rec.holder and rec.holder != self.identity and not self._expired(rec):
                return False
            return self._write(lease, deadline, started)
        except ConflictError:
            self._lease = None  # someone else wrote: read again next time
            return False
        except KubeError as exc:
            log.warning("%s: lease %s: %s", self.identity, self.config.lease_name, exc)
            self._lease = None
            return False

    def _timeout(self, deadline: float) -> float:
        return max(deadline - self._clock(), 0.05)

    def _current(self, deadline: float) -> KubeObject | None:
        if self._lease is not None and self._leading.is_set():
            return self._lease
        try:
            return self.client.get(
                LEASES,
                self.config.lease_name,
                namespace=self.config.namespace,
                timeout=self._timeout(deadline),
            )
        except NotFoundError:
            return None

    def _write(self, lease: KubeObject | None, deadline: float, started: float) -> bool:
        c = self.config
        old = record_of(lease) if lease is not None else None
        body = lease_body(
            old_lease=lease,
            name=c.lease_name,
            namespace=c.namespace,
            holder=self.identity,
            duration_seconds=math.ceil(c.lease_duration),
            now=micro_time(),
            keep_acquire=old is not None and old.holder == self.identity,
        )
        if lease is None:
            new = self.client.create(LEASES, body, timeout=self._timeout(deadline))
        else:
            new = self.client.replace(LEASES, body, timeout=self._timeout(deadline))
        self._lease = new
        self._observe(new)
        with self._lock:
            self._renewed_at = started
        return True

    def _expired(self, rec: LeaseRecord) -> bool:
        with self._lock:
            return self._observed_at + rec.duration <= self._clock()

    def _observe(self, lease: KubeObject) -> LeaseRecord:
        """Remember the record and, when it changed, the moment we first saw it."""
        rec, rv = record_of(lease), _rv(lease)
        with self._lock:
            if 0 <= rv < self._observed_rv:  # a watch event older than what a write returned
                return self._observed or rec
            changed = rec != self._observed
            new_holder = self._observed is None or rec.holder != self._observed.holder
            self._observed_rv = rv
            if changed:
                self._observed, self._observed_at = rec, self._clock()
        if new_holder and rec.holder and self._new_leader_cb is not None:
            self._call(self._new_leader_cb, rec.holder)
        return rec

    def _release(self) -> None:
        lease = self._lease
        if lease is None:
            return
        body = lease_body(
            old_lease=lease,
            name=self.config.lease_name,
            namespace=self.config.namespace,
            holder="",
            duration_seconds=1,
            now=micro_time(),
            keep_acquire=False,
        )
        try:
            self.client.replace(LEASES, body, timeout=self.config.retry_period)
            log.info("%s: released lease %s", self.identity, self.config.lease_name)
        except KubeError as exc:
            log.warning("%s: lease not released (%s); it expires on its own", self.identity, exc)

    # -- plumbing ----------------------------------------------------------------
    def _lease_informer(self) -> Informer:
        inf = Informer(
            self.client,
            LEASES,
            namespace=self.config.namespace,
            field_selector=f"metadata.name={self.config.lease_name}",
        )
        inf.add_handlers(Handlers(on_add=self._seen, on_update=lambda _o, n: self._seen(n)))
        return inf

    def _seen(self, lease: KubeObject) -> None:
        rec = self._observe(lease)
        if not rec.holder and not self._leading.is_set():
            self._wake.set()  # released: take it now

    def _call(self, fn: Callable[..., None], *args: object) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("%s: leader-election callback failed", self.identity)


def _rv(lease: KubeObject) -> int:
    """The resourceVersion as a number (etcd revisions), or -1 when it is not one."""
    try:
        return int(lease.get("metadata", {}).get("resourceVersion", ""))
    except ValueError:
        return -1

"""Prometheus metrics of the provisioner (one registry per process)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PREFIX = "atomic_gang_"
_SLOW = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600)


@dataclass(frozen=True)
class ProvisionerMetrics:
    registry: CollectorRegistry
    acquisitions: Counter
    shortfalls: Counter
    time_to_satisfied: Histogram
    join_duration: Histogram
    keep_warm_reuses: Counter
    reaped: Counter
    sweeps: Counter
    released: Counter
    reconcile_errors: Counter
    reconcile_duration: Histogram
    queue_depth: Gauge
    leader: Gauge
    check_transitions: Counter
    block_wait: Histogram
    reservation_available: Gauge
    spread: Gauge
    reaped_groups: Counter

    @classmethod
    def create(cls) -> ProvisionerMetrics:
        """One registry, every metric named and described once (a table: read down)."""
        r = CollectorRegistry()

        def counter(name: str, doc: str, *labels: str) -> Counter:
            return Counter(PREFIX + name, doc, labels, registry=r)

        def slow(name: str, doc: str) -> Histogram:
            return Histogram(PREFIX + name, doc, buckets=_SLOW, registry=r)

        def gauge(name: str, doc: str, *labels: str) -> Gauge:
            return Gauge(PREFIX + name, doc, labels, registry=r)

        return cls(
            registry=r,
            acquisitions=counter("acquisitions", "Attempts by mode and result.", "mode", "result"),
            shortfalls=counter(
                "shortfalls", "Failed attempts (nothing billed) by reason.", "reason"
            ),
            time_to_satisfied=slow(
                "time_to_satisfied_seconds", "From the first attempt to N Ready nodes."
            ),
            join_duration=slow("join_duration_seconds", "From launch to N Ready nodes."),
            keep_warm_reuses=counter("keep_warm_reuses", "Claims served by a warm set."),
            reaped=counter("reaped_instances", "Instances terminated by the reaper.", "reason"),
            sweeps=counter("reaper_sweeps", "Completed reaper sweeps."),
            released=counter("released_instances", "Instances released by pools."),
            reconcile_errors=counter("reconcile_errors", "Reconciles that raised.", "controller"),
            reconcile_duration=Histogram(
                PREFIX + "reconcile_duration_seconds", "Reconcile time.", ["controller"], registry=r
            ),
            queue_depth=gauge("queue_depth", "Keys waiting in a work queue.", "controller"),
            leader=gauge("leader", "1 while this replica holds the leader lease."),
            check_transitions=counter(
                "admission_check_transitions", "AdmissionCheckState writes by state.", "state"
            ),
            block_wait=slow(
                "capacity_block_wait_seconds",
                "From a gang's first wait for a listed reservation's start to its launch.",
            ),
            reservation_available=gauge(
                "capacity_reservation_available_instances",
                "AvailableInstanceCount of each reservation a Job lists, as last described.",
                "reservation_id",
                "kind",
            ),
            spread=gauge("pool_spread", "Network nodes (bottom layer) a gang spans.", "pool"),
            reaped_groups=counter("reaped_placement_groups", "Groups of deleted pools."),
        )

    def saw_reservation(self, reservation_id: str, *, kind: str, available: int) -> None:
        self.reservation_available.labels(reservation_id, kind).set(available)

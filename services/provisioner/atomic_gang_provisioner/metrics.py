"""Prometheus metrics of the provisioner (one registry per process)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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

    @classmethod
    def create(cls) -> ProvisionerMetrics:
        r = CollectorRegistry()
        p = "atomic_gang_"
        return cls(
            registry=r,
            acquisitions=Counter(
                p + "acquisitions",
                "Acquisition attempts by mode and result.",
                ["mode", "result"],
                registry=r,
            ),
            shortfalls=Counter(
                p + "shortfalls",
                "Failed attempts (nothing billed) by reason.",
                ["reason"],
                registry=r,
            ),
            time_to_satisfied=Histogram(
                p + "time_to_satisfied_seconds",
                "From the first attempt to N Ready nodes.",
                buckets=_SLOW,
                registry=r,
            ),
            join_duration=Histogram(
                p + "join_duration_seconds",
                "From launch to N Ready nodes.",
                buckets=_SLOW,
                registry=r,
            ),
            keep_warm_reuses=Counter(
                p + "keep_warm_reuses", "Claims served by a warm set.", registry=r
            ),
            reaped=Counter(
                p + "reaped_instances",
                "Instances terminated by the reaper.",
                ["reason"],
                registry=r,
            ),
            sweeps=Counter(p + "reaper_sweeps", "Completed reaper sweeps.", registry=r),
            released=Counter(p + "released_instances", "Instances released by pools.", registry=r),
            reconcile_errors=Counter(
                p + "reconcile_errors", "Reconciles that raised.", ["controller"], registry=r
            ),
            reconcile_duration=Histogram(
                p + "reconcile_duration_seconds", "Reconcile time.", ["controller"], registry=r
            ),
            queue_depth=Gauge(
                p + "queue_depth", "Keys waiting in a work queue.", ["controller"], registry=r
            ),
            leader=Gauge(p + "leader", "1 while this replica holds the leader lease.", registry=r),
            check_transitions=Counter(
                p + "admission_check_transitions",
                "AdmissionCheckState writes by state.",
                ["state"],
                registry=r,
            ),
        )

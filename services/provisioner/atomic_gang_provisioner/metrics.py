"""Prometheus metrics of the provisioner (one registry per process).

Two tables, read down: the reconcilers' own counters, and what an operator looks at
(alerts and the dashboard: the cost ledger, the pool gauges, the check's Active, AWS
calls, what the reaper found). docs/operations.md lists every family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from atomic_gang_provisioner.cost import CostLedger
from atomic_gang_provisioner.poolstats import PoolStats

PREFIX = "atomic_gang_"
_SLOW = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600)


def _counter(r: CollectorRegistry, name: str, doc: str, *labels: str) -> Counter:
    return Counter(PREFIX + name, doc, labels, registry=r)


def _gauge(r: CollectorRegistry, name: str, doc: str, *labels: str) -> Gauge:
    return Gauge(PREFIX + name, doc, labels, registry=r)


class _OperatorView(TypedDict):
    check_active: Gauge
    aws_calls: Counter
    reapable: Gauge
    cost: CostLedger
    pool_stats: PoolStats


def _operator_view(r: CollectorRegistry) -> _OperatorView:
    cost, pool_stats = CostLedger(), PoolStats()
    r.register(cost)
    r.register(pool_stats)
    return _OperatorView(
        check_active=_gauge(
            r,
            "admission_check_active",
            "1 while our AdmissionCheck is Active=True, 0 while False.",
            "admission_check",
        ),
        aws_calls=_counter(
            r,
            "aws_calls",
            "AWS API requests sent (each retry counts) by operation and outcome: ok, "
            "throttled, capacity, quota, transient, not_found, permanent, unexpected.",
            "operation",
            "outcome",
        ),
        reapable=_gauge(
            r,
            "reapable_instances",
            "Instances the reaper's last sweep found to terminate, by reason (before the "
            "release: one that keeps failing keeps this up).",
            "reason",
        ),
        cost=cost,
        pool_stats=pool_stats,
    )


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
    queue_wait: Histogram
    queue_depth: Gauge
    leader: Gauge
    check_transitions: Counter
    block_wait: Histogram
    reservation_available: Gauge
    spread: Gauge
    repairs: Counter
    repair_duration: Histogram
    repair_kept_instance_seconds: Counter
    reaped_groups: Counter
    check_active: Gauge
    aws_calls: Counter
    reapable: Gauge
    cost: CostLedger
    pool_stats: PoolStats

    @classmethod
    def create(cls) -> ProvisionerMetrics:
        """One registry, every metric named and described once."""
        r = CollectorRegistry()

        def counter(name: str, doc: str, *labels: str) -> Counter:
            return _counter(r, name, doc, *labels)

        def slow(name: str, doc: str) -> Histogram:
            return Histogram(PREFIX + name, doc, buckets=_SLOW, registry=r)

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
            queue_wait=Histogram(
                PREFIX + "queue_wait_seconds",
                "From a key queued (ready) to a worker taking it.",
                ["controller"],
                registry=r,
            ),
            queue_depth=_gauge(r, "queue_depth", "Keys waiting in a work queue.", "controller"),
            leader=_gauge(r, "leader", "1 while this replica holds the leader lease."),
            check_transitions=counter(
                "admission_check_transitions", "AdmissionCheckState writes by state.", "state"
            ),
            block_wait=slow(
                "capacity_block_wait_seconds",
                "From a gang's first wait for a listed reservation's start to its launch.",
            ),
            reservation_available=_gauge(
                r,
                "capacity_reservation_available_instances",
                "AvailableInstanceCount of each reservation a Job lists, as last described.",
                "reservation_id",
                "kind",
            ),
            spread=_gauge(r, "pool_spread", "Network nodes (bottom layer) a gang spans.", "pool"),
            repairs=counter(
                "repairs",
                "Repairs of broken gangs by pool, what broke the first node (InstanceLost, "
                "NodeNotReady, NodeUnhealthy) and result (replaced; released: a limit was hit).",
                "pool",
                "reason",
                "result",
            ),
            repair_duration=slow(
                "repair_duration_seconds", "From a node's break to all N nodes Ready again."
            ),
            repair_kept_instance_seconds=counter(
                "repair_kept_instance_seconds",
                "Healthy instances' running time a repair kept (a release of the whole set "
                "would have thrown it away).",
            ),
            reaped_groups=counter("reaped_placement_groups", "Groups of deleted pools."),
            **_operator_view(r),
        )

    def aws_call(self, operation: str, outcome: str) -> None:
        self.aws_calls.labels(operation, outcome).inc()

    def saw_reservation(self, reservation_id: str, *, kind: str, available: int) -> None:
        self.reservation_available.labels(reservation_id, kind).set(available)

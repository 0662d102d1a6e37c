"""Prometheus metrics of the webhook, on a registry of its own per app.

The three families on the admission path (reviews, violations, latency) are plain
ints in :class:`ReviewTally`, turned into samples only when /metrics is scraped.
prometheus_client's metric objects take a lock and validate on every ``inc`` and
``observe``; the tally counts a review in a fraction of their time, measured side by
side (docs/benchmarks.md#counting-a-review-benchreview_metrics).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from atomic_gang_webhook.guards import CLOSE_REASONS

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
REVIEWS = "atomic_gang_webhook_reviews"
VIOLATIONS = "atomic_gang_webhook_violations"
LATENCY = "atomic_gang_webhook_review_duration_seconds"
# Label values come from closed sets only: a tenant's string never becomes a series.
OPERATIONS = frozenset({"CREATE", "UPDATE", ""})


@dataclass(eq=False)  # the registry keys collectors by identity
class ReviewTally(Collector):
    """Counts of the admission path, exported on scrape.

    Single writer: reviews are counted on the event loop's thread, and /metrics is
    served on the same loop, so counting needs no lock. A scrape from another thread
    would still be safe: ``dict(...)`` and ``list(...)`` copy atomically under the GIL.
    """

    bounds: tuple[float, ...] = BUCKETS
    reviews: dict[tuple[str, str, str], int] = field(default_factory=dict)
    violations: dict[str, int] = field(default_factory=dict)
    buckets: list[int] = field(init=False, default_factory=list)
    latency_sum: float = 0.0
    labels: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        self.buckets = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        bounds = (*self.bounds, float("inf"))
        self.labels = tuple(floatToGoString(b) for b in bounds)  # type: ignore[no-untyped-call]

    def review(self, operation: str, verdict: str, reason: str) -> None:
        key = (operation if operation in OPERATIONS else "other", verdict, reason)
        self.reviews[key] = self.reviews.get(key, 0) + 1

    def violation(self, reason: str) -> None:
        self.violations[reason] = self.violations.get(reason, 0) + 1

    def observe(self, seconds: float) -> None:
        self.buckets[bisect_left(self.bounds, seconds)] += 1  # le: value <= bound
        self.latency_sum += seconds

    def describe(self) -> Iterator[Metric]:
        return self._families({}, {}, [0] * len(self.buckets), 0.0)

    def collect(self) -> Iterator[Metric]:
        return self._families(
            dict(self.reviews), dict(self.violations), list(self.buckets), self.latency_sum
        )

    def _families(
        self,
        reviews: dict[tuple[str, str, str], int],
        violations: dict[str, int],
        buckets: list[int],
        total: float,
    ) -> Iterator[Metric]:
        fam = CounterMetricFamily(
            REVIEWS,
            "Admission reviews by verdict (allowed/denied/malformed) and reason.",
            labels=["operation", "verdict", "reason"],
        )
        for key, n in sorted(reviews.items()):
            fam.add_metric(list(key), n)
        yield fam
        fam = CounterMetricFamily(
            VIOLATIONS, "Rule violations found in denied Jobs, by reason code.", labels=["reason"]
        )
        for reason, n in sorted(violations.items()):
            fam.add_metric([reason], n)
        yield fam
        cumulative, running = [], 0
        for le, n in zip(self.labels, buckets, strict=True):
            running += n
            cumulative.append((le, float(running)))
        hist = HistogramMetricFamily(LATENCY, "Time to answer one admission review.")
        hist.add_metric([], cumulative, total)
        yield hist


@dataclass(frozen=True)
class WebhookMetrics:
    registry: CollectorRegistry
    tally: ReviewTally
    cert_reloads: Counter
    cert_expiry: Gauge
    connections_closed: Counter
    open_connections: Gauge

    @classmethod
    def create(cls) -> WebhookMetrics:
        reg = CollectorRegistry()
        tally = ReviewTally()
        reg.register(tally)
        closed = Counter(
            "atomic_gang_webhook_connections_closed",
            "Connections the webhook closed or refused to protect itself, by guard.",
            ["reason"],
            registry=reg,
        )
        for reason in CLOSE_REASONS:
            closed.labels(reason)
        return cls(
            registry=reg,
            tally=tally,
            cert_reloads=Counter(
                "atomic_gang_webhook_certificate_reloads",
                "Serving certificate pairs picked up without a restart.",
                registry=reg,
            ),
            cert_expiry=Gauge(
                "atomic_gang_webhook_certificate_expiry_timestamp_seconds",
                "notAfter of the serving certificate in use.",
                registry=reg,
            ),
            connections_closed=closed,
            open_connections=Gauge(
                "atomic_gang_webhook_open_connections",
                "Connections open now, TLS handshakes included (limit: max_connections).",
                registry=reg,
            ),
        )

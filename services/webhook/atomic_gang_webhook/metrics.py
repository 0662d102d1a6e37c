"""Prometheus metrics of the webhook, on a registry of its own per app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


@dataclass(frozen=True)
class WebhookMetrics:
    registry: CollectorRegistry
    reviews: Counter
    violations: Counter
    latency: Histogram
    cert_reloads: Counter
    cert_expiry: Gauge
    # labels() validates and locks on every call; the label sets are few, so keep the
    # children (a measurable share of a review's cost on the hot path).
    _children: dict[tuple[str, ...], Any] = field(default_factory=dict)

    def review(self, operation: str, verdict: str, reason: str) -> None:
        key = ("r", operation, verdict, reason)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.reviews.labels(operation, verdict, reason)
        child.inc()

    def violation(self, reason: str) -> None:
        key = ("v", reason)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.violations.labels(reason)
        child.inc()

    @classmethod
    def create(cls) -> WebhookMetrics:
        reg = CollectorRegistry()
        return cls(
            registry=reg,
            reviews=Counter(
                "atomic_gang_webhook_reviews",
                "Admission reviews by verdict (allowed/denied/malformed) and reason.",
                ["operation", "verdict", "reason"],
                registry=reg,
            ),
            violations=Counter(
                "atomic_gang_webhook_violations",
                "Rule violations found in denied Jobs, by reason code.",
                ["reason"],
                registry=reg,
            ),
            latency=Histogram(
                "atomic_gang_webhook_review_duration_seconds",
                "Time to answer one admission review.",
                buckets=_BUCKETS,
                registry=reg,
            ),
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
        )

"""Prometheus metrics of the webhook, on a registry of its own per app."""

from __future__ import annotations

from dataclasses import dataclass

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

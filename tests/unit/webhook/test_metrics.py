"""ReviewTally exports what prometheus_client's own Counter and Histogram would."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from atomic_gang_webhook.metrics import BUCKETS, LATENCY, ReviewTally, WebhookMetrics


def _samples(registry: CollectorRegistry, name: str) -> dict[str, float]:
    out = {}
    for family in registry.collect():
        for s in family.samples:
            if s.name.startswith(name) and not s.name.endswith("_created"):
                out[s.name + str(sorted(s.labels.items()))] = s.value
    return out


# Bounds themselves included: a value equal to a bound falls in that bucket (le).
_SECONDS = st.lists(
    st.one_of(st.sampled_from(BUCKETS), st.floats(0, 2, allow_nan=False)), max_size=40
)


@given(_SECONDS)
def test_latency_histogram_matches_prometheus_client(values: list[float]) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    tally = ReviewTally()
    ours.register(tally)
    reference = Histogram(LATENCY, "Latency.", buckets=BUCKETS, registry=theirs)
    for v in values:
        tally.observe(v)
        reference.observe(v)
    got, want = _samples(ours, LATENCY), _samples(theirs, LATENCY)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == value if "_sum" not in key else abs(got[key] - value) < 1e-9


def test_counts_are_exported_by_label() -> None:
    m = WebhookMetrics.create()
    for _ in range(3):
        m.tally.review("CREATE", "denied", "InvalidMode")
    m.tally.review("UPDATE", "allowed", "Unchanged")
    m.tally.violation("InvalidMode")
    m.tally.violation("CountMismatch")
    m.tally.violation("CountMismatch")
    text = generate_latest(m.registry).decode()
    assert (
        'atomic_gang_webhook_reviews_total{operation="CREATE",reason="InvalidMode",'
        'verdict="denied"} 3.0' in text
    )
    assert (
        'atomic_gang_webhook_reviews_total{operation="UPDATE",reason="Unchanged",'
        'verdict="allowed"} 1.0' in text
    )
    assert 'atomic_gang_webhook_violations_total{reason="CountMismatch"} 2.0' in text
    assert "# TYPE atomic_gang_webhook_review_duration_seconds histogram" in text


def test_a_second_collector_with_our_names_is_refused() -> None:
    """describe() names our families, so the registry catches a duplicate."""
    m = WebhookMetrics.create()
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        Histogram(LATENCY, "dup", registry=m.registry)


def test_operation_labels_come_from_a_closed_set() -> None:
    tally = ReviewTally()
    tally.review("CREATE", "allowed", "Valid")
    tally.review("x" * 10_000, "malformed", "UnsupportedOperation")
    tally.review("DELETE", "malformed", "UnsupportedOperation")
    assert {op for op, _, _ in tally.reviews} == {"CREATE", "other"}

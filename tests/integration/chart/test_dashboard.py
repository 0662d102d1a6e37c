"""The Grafana dashboard ConfigMap: the sidecar's label, the panels an operator expects,
and every query naming only metrics the two services export (read from their registries)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_webhook.metrics import WebhookMetrics
from tests.integration.chart.render import Rendered

SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
    "unknown": ("",),
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*")
KEYWORDS = frozenset(
    {"and", "or", "unless", "bool", "offset", "inf", "nan", "group_left", "group_right"}
)
# What the operator asked for (issue 16): each needs a panel whose title says so.
TOPICS = (
    "Gangs by phase",
    "Time to Satisfied",
    "Shortfalls by reason",
    "AWS calls",
    "Throttled",
    "Instances billed, by state",
    "Review latency",
    "Denials by reason",
)


def exported() -> set[str]:
    """Sample names of every family on both services' registries."""
    names: set[str] = set()
    for registry in (ProvisionerMetrics.create().registry, WebhookMetrics.create().registry):
        for family in registry.collect():
            names |= {family.name + s for s in SUFFIXES[family.type]}
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (not functions, labels or keywords)."""
    text = re.sub(r"\$\w+", "", _STRING.sub("", expr))
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", text)
    text = _GROUPING.sub("", text)
    return {
        m.group()
        for m in _IDENT.finditer(text)
        if m.group().lower() not in KEYWORDS and not text[m.end() :].lstrip().startswith("(")
    }


@pytest.fixture(scope="module")
def dashboard(renders: dict[str, Rendered]) -> dict[str, Any]:
    cm = renders["extras"].one("ConfigMap", "-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    [(key, text)] = cm["data"].items()
    assert key.endswith(".json")
    board: dict[str, Any] = json.loads(text)
    return board


def queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (p["title"], t["expr"])
        for p in board["panels"]
        for t in p.get("targets", ())
        if "expr" in t
    ]


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        pytest.param(
            'sum by (le) (rate(a_bucket{namespace="$namespace",x=~"y|z"}[$__rate_interval]))',
            {"a_bucket"},
            id="grouping-matchers-range",
        ),
        pytest.param("min(b - time()) / 86400 or vector(0)", {"b"}, id="functions-and-numbers"),
        pytest.param("topk(10, c) + on (pool) group_left d offset 5m", {"c", "d"}, id="joins"),
    ],
)
def test_the_name_extractor(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_every_query_names_only_exported_metrics(dashboard: dict[str, Any]) -> None:
    known = exported()
    assert "atomic_gang_instance_seconds_total" in known  # the registries are really read
    assert "atomic_gang_webhook_review_duration_seconds_bucket" in known
    found = {title: metric_names(expr) for title, expr in queries(dashboard)}
    assert all(found.values()), [t for t, n in found.items() if not n]
    unknown = {title: names - known for title, names in found.items() if names - known}
    assert unknown == {}
    variable = dashboard["templating"]["list"][1]["definition"]
    assert metric_names(variable.removeprefix("label_values(").split(",")[0]) <= known


def test_the_panels_an_operator_asked_for(dashboard: dict[str, Any]) -> None:
    titles = [p["title"] for p in dashboard["panels"]]
    for topic in TOPICS:
        assert any(topic in t for t in titles), topic
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for title, expr in queries(dashboard):
        assert 'namespace="$namespace"' in expr, title  # one release at a time


def test_labels_annotations_and_off_by_default(renders: dict[str, Rendered]) -> None:
    cm = renders["alerts-custom"].one("ConfigMap", "-dashboard")
    assert cm["metadata"]["labels"]["team"] == "ml"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "ML"}
    names = [c["metadata"]["name"] for c in renders["default"].of("ConfigMap")]
    assert not any(n.endswith("-dashboard") for n in names)

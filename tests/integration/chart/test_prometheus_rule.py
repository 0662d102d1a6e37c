"""The chart's PrometheusRule, checked by Prometheus's own promtool (built by hack/build-bins.sh).

``promtool check rules`` on the rendered rule; ``promtool test rules`` runs
``promtool/alerts-test.yaml``: every alert has a case in which it fires and one in which
it stays silent. Every alert has a runbook section in docs/operations.md.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from atomic_gang_devstack.bins import REPO_ROOT, Bins
from tests.integration.chart.render import Rendered
from tests.unit.docs.test_links import anchors

ALERT_TESTS = Path(__file__).parent / "promtool" / "alerts-test.yaml"
OPERATIONS = REPO_ROOT / "docs" / "operations.md"


@pytest.fixture(scope="module")
def promtool() -> Path:
    bins = Bins.load()
    bins.ensure(("promtool",))  # built when missing, never skipped
    return bins.path("promtool")


def _rules(r: Rendered) -> list[dict[str, Any]]:
    spec = r.one("PrometheusRule")["spec"]
    return [rule for group in spec["groups"] for rule in group["rules"]]


@pytest.fixture(scope="module")
def rules(renders: dict[str, Rendered]) -> list[dict[str, Any]]:
    return _rules(renders["extras"])


@pytest.fixture(scope="module")
def workdir(renders: dict[str, Rendered], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rendered rule as rules.yaml, beside a copy of the unit tests."""
    d = tmp_path_factory.mktemp("promtool")
    spec = renders["extras"].one("PrometheusRule")["spec"]
    (d / "rules.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    shutil.copy(ALERT_TESTS, d / ALERT_TESTS.name)
    return d


def _promtool(promtool: Path, workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(promtool), *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_promtool_accepts_the_rendered_rule(
    promtool: Path, workdir: Path, rules: list[Any]
) -> None:
    done = _promtool(promtool, workdir, "check", "rules", "rules.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout + done.stderr


def test_every_alert_fires_when_it_should_and_only_then(promtool: Path, workdir: Path) -> None:
    done = _promtool(promtool, workdir, "test", "rules", ALERT_TESTS.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_promtool_fails_a_wrong_expectation(promtool: Path, workdir: Path) -> None:
    """The unit tests are evaluated, not just parsed: a silent case that expects an alert
    (the pending claim of 600 s) fails, naming the alert."""
    tests = yaml.safe_load(ALERT_TESTS.read_text(encoding="utf-8"))
    case = tests["tests"][0]["alert_rule_test"][0]
    case["exp_alerts"] = [{"exp_labels": {"severity": "warning", "pool": "small"}}]
    (workdir / "wrong-test.yaml").write_text(yaml.safe_dump(tests), encoding="utf-8")
    done = _promtool(promtool, workdir, "test", "rules", "wrong-test.yaml")
    assert done.returncode != 0
    assert "AtomicGangPendingTooLong" in done.stdout + done.stderr


def test_every_alert_is_tested_firing_and_silent(rules: list[dict[str, Any]]) -> None:
    tests = yaml.safe_load(ALERT_TESTS.read_text(encoding="utf-8"))["tests"]
    cases = [c for t in tests for c in t["alert_rule_test"]]
    for name in (r["alert"] for r in rules):
        outcomes = {bool(c["exp_alerts"]) for c in cases if c["alertname"] == name}
        assert outcomes == {True, False}, f"{name}: needs a firing and a silent case"


def test_every_alert_has_a_runbook_section(rules: list[dict[str, Any]]) -> None:
    sections = anchors(OPERATIONS.read_text(encoding="utf-8"))
    for rule in rules:
        anchor = rule["alert"].lower()
        assert rule["annotations"]["runbook"] == f"docs/operations.md#{anchor}"
        assert anchor in sections, f"docs/operations.md has no '### {rule['alert']}'"
        assert "runbook_url" not in rule["annotations"]  # no runbookBaseUrl by default
        assert rule["labels"]["severity"] in ("warning", "critical")


def test_values_set_thresholds_labels_runbook_urls_and_the_webhook_name(
    renders: dict[str, Rendered],
) -> None:
    r = renders["alerts-custom"]
    rule = r.one("PrometheusRule")
    by_name = {x["alert"]: x for x in _rules(r)}
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus"
    assert by_name["AtomicGangPendingTooLong"]["expr"].endswith("> 600")
    assert f"< {30 * 86400}" in by_name["AtomicGangWebhookCertificateExpiring"]["expr"]
    errors = by_name["AtomicGangWebhookErrors"]["expr"]
    # Every entry the chart registers, its name's dots escaped in the regex.
    for name in ("gang-jobs", "jobsets\\\\.atomic-gang", "gang-trainjobs", "gang-runtimes"):
        assert f"{name}\\\\." in errors
    for name, x in by_name.items():
        want = f"https://example.com/ops/operations.md#{name.lower()}"
        assert x["annotations"]["runbook_url"] == want


def test_every_selector_is_scoped_to_the_release_namespace(rules: list[dict[str, Any]]) -> None:
    """Two releases in one Prometheus never answer for each other (the apiserver's
    metric is matched by the webhook's name instead)."""
    for rule in rules:
        for selector in re.findall(r"(atomic_gang_\w+)\{([^}]*)\}", rule["expr"]):
            assert 'namespace="atomic-gang-system"' in selector[1], (rule["alert"], selector)


def test_off_unless_enabled(renders: dict[str, Rendered]) -> None:
    assert "PrometheusRule" not in renders["default"].kinds
    assert "PrometheusRule" not in renders["custom"].kinds

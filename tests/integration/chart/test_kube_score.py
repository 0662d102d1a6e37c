"""kube-score (a third-party manifest checker, built by hack/build-bins.sh) over the chart.

Every WARNING or CRITICAL finding must be waived in ``ci/kube-score-waivers.yaml``
with a reason; a new finding fails, and so does a waiver that no longer matches
(so the file never outlives the chart). Two renders: the required values (the
NetworkPolicies on, the default), and ``networkPolicy.enabled=false``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from atomic_gang_devstack.bins import Bins
from tests.integration.chart.render import CHART, REQUIRED, manifest, merge, render

WAIVERS = CHART / "ci" / "kube-score-waivers.yaml"
KUBE_SCORE_K8S = "v1.36"
RENDERS = {
    "required": REQUIRED,
    "no-network-policy": merge(REQUIRED, {"networkPolicy": {"enabled": False}}),
}
GRADE_WARNING = 5  # kube-score's scorecard grades: 1 critical, 5 warning, 7 almost ok, 10 ok


@pytest.fixture(scope="module")
def kube_score() -> Path:
    bins = Bins.load()
    bins.ensure(("kube-score",))  # built when missing, never skipped
    return bins.path("kube-score")


def findings(kube_score: Path, objects: tuple[dict[str, Any], ...]) -> set[str]:
    """``Kind/name check-id (path)`` of every WARNING or CRITICAL finding."""
    done = subprocess.run(
        [str(kube_score), "score", "--output-format", "json",
         "--kubernetes-version", KUBE_SCORE_K8S, "-"],
        input=manifest(objects), capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr  # exit 1 means "findings", not "failed to run"
    out = set()
    for obj in json.loads(done.stdout):
        ref = f"{obj['type_meta']['kind']}/{obj['object_meta']['name']}"
        for check in obj["checks"]:
            if check["skipped"] or check["grade"] > GRADE_WARNING:
                continue
            paths = sorted({c["path"] for c in check["comments"] or []}) or [""]
            out |= {f"{ref} {check['check']['id']} ({p})".replace(" ()", "") for p in paths}
    return out


def waivers() -> dict[str, str]:
    entries = yaml.safe_load(WAIVERS.read_text(encoding="utf-8"))
    return {e["finding"]: e["reason"] for e in entries}


def test_every_waiver_has_a_reason() -> None:
    assert all(reason.strip() for reason in waivers().values())


@pytest.mark.parametrize("case", list(RENDERS))
def test_kube_score_finds_nothing_unwaived(case: str, helm: Path, kube_score: Path) -> None:
    rendered = render(helm, RENDERS[case])
    assert rendered.returncode == 0, rendered.stderr

    found = findings(kube_score, rendered.objects)

    waived = {f for f in waivers() if f.startswith(tuple(f"[{c}] " for c in (case, "*")))}
    unprefixed = {f.split("] ", 1)[1] for f in waived}
    assert found - unprefixed == set(), "new kube-score findings (fix, or waive with a reason)"
    assert unprefixed - found == set(), "waivers that no longer match a finding (remove them)"

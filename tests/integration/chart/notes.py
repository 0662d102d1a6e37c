"""The chart's NOTES.txt, rendered offline, and the verifying commands it must carry.

``helm template`` never renders NOTES.txt, and ``helm install --dry-run``
still asks a cluster for its version. So a copy of the chart gains one extra
template that renders NOTES.txt's text with ``tpl`` (same values, same named
templates) into a document ``--show-only`` picks out. The e2e release checks
the same lines in the real ``helm install`` output.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.integration.chart.render import CHART, KUBE_VERSION, NAMESPACE, RELEASE

SPEC_CHECK_NAME = "atomic-gang-check"
# The three verifying steps NOTES.txt must print, in order (docs/operations.md, "Verifying").
SPEC_VERIFY = (
    "# 1. The AdmissionCheck should report Active=True (controller is present + healthy).",
    "kubectl get admissioncheck",
    "kubectl get admissioncheck atomic-gang-check -o jsonpath='{.status.conditions}'",
    "# 2. Inspect the internal pool records (controller-owned; short name: gnp).",
    "kubectl get gangnodepools",
    "# 3. Watch the Workload's admission move Pending -> Ready as nodes join.",
    "kubectl get workloads",
    "kubectl describe workload <workload-name>   # see the AdmissionCheckState transitions",
)
_SOURCE = "rendered-notes.txt"
_TEMPLATE = "templates/zz-rendered-notes.yaml"
_RENDERER = f"""kind: RenderedNotes
text: {{{{ tpl (.Files.Get "{_SOURCE}") . | toJson }}}}
"""


def spec_verify_lines(check_name: str) -> list[str]:
    """Those lines, naming this release's AdmissionCheck."""
    return [line.replace(SPEC_CHECK_NAME, check_name) for line in SPEC_VERIFY]


def missing_in_order(text: str, wanted: Sequence[str]) -> list[str]:
    """``wanted`` lines not found as whole lines of ``text`` in that order (empty: all there)."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    at, missing = 0, []
    for want in wanted:
        try:
            at = lines.index(want, at) + 1
        except ValueError:
            missing.append(want)
    return missing


def notes_chart(workdir: Path) -> Path:
    """A copy of the chart that can render its NOTES.txt under ``helm template``."""
    chart = workdir / CHART.name
    shutil.copytree(CHART, chart)
    shutil.copy2(CHART / "templates" / "NOTES.txt", chart / _SOURCE)
    (chart / _TEMPLATE).write_text(_RENDERER, encoding="utf-8")
    return chart


def render_notes(
    helm: Path,
    chart: Path,
    values: Mapping[str, Any],
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
) -> str:
    """NOTES.txt as ``helm install`` would print it for ``values``."""
    argv = [str(helm), "template", release, str(chart), "--namespace", namespace]
    argv += ["--kube-version", KUBE_VERSION, "--show-only", _TEMPLATE, "--values", "-"]
    done = subprocess.run(
        argv, input=json.dumps(values), capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    doc = yaml.safe_load(done.stdout)
    assert doc["kind"] == "RenderedNotes", done.stdout
    return str(doc["text"])
